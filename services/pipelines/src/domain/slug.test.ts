import { derivePipelineSlug, MAX_PIPELINE_SLUG_LENGTH, pipelineSlugProblem } from "./slug.js";

describe("derivePipelineSlug", () => {
  it.each([
    ["My Pipeline", "my-pipeline"],
    ["My   Great    Pipeline", "my-great-pipeline"],
    ["Deploy\tTo  Prod", "deploy-to-prod"],
    ["UPPER", "upper"],
    ["  padded name  ", "padded-name"],
    ["api (v2)", "api-v2"],
    ["a - b", "a-b"],
    ["-leading", "leading"],
    ["émoji 🚀 app", "moji-app"],
    ["!!!", ""],
  ])("%j → %j", (name, slug) => {
    expect(derivePipelineSlug(name)).toBe(slug);
  });

  it("is at most 100 characters", () => {
    expect(derivePipelineSlug("x".repeat(250))).toHaveLength(MAX_PIPELINE_SLUG_LENGTH);
  });
});

describe("pipelineSlugProblem", () => {
  it.each(["a", "my-pipeline", "9-lives", "trailing-", "a".repeat(100)])("accepts %j", (slug) => {
    expect(pipelineSlugProblem(slug)).toBeUndefined();
  });

  it.each([
    ["", "can't be blank"],
    ["-leading", "cannot begin with a dash"],
    ["has space", "may only contain"],
    ["under_score", "may only contain"],
    ["dot.ted", "may only contain"],
    ["a".repeat(101), "too long"],
  ])("rejects %j", (slug, reason) => {
    expect(pipelineSlugProblem(slug)).toContain(reason);
  });
});
