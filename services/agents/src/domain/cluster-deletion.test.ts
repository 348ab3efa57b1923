import { clusterPipelinesProblem } from "./cluster-deletion.js";

describe("clusterPipelinesProblem", () => {
  it("lets a cluster no pipeline names be deleted", () => {
    expect(clusterPipelinesProblem({ slugs: [], total: 0 })).toBeNull();
  });

  it("names the pipelines, at most three, and counts the others", () => {
    expect(clusterPipelinesProblem({ slugs: ["app"], total: 1 })).toBe(
      "The cluster has 1 pipeline (app): move it to another cluster first",
    );
    expect(clusterPipelinesProblem({ slugs: ["a", "b", "c"], total: 3 })).toBe(
      "The cluster has 3 pipelines (a, b, c): move them to another cluster first",
    );
    expect(clusterPipelinesProblem({ slugs: ["a", "b", "c", "d"], total: 40 })).toBe(
      "The cluster has 40 pipelines (a, b, c and 37 more): move them to another cluster first",
    );
  });
});
