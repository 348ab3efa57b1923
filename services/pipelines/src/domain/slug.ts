/** Longest pipeline slug the service accepts. */
export const MAX_PIPELINE_SLUG_LENGTH = 100;

const SLUG_RE = /^[a-z0-9][a-z0-9-]*$/i;

/**
 * Derives a pipeline slug from its name: every run of spaces becomes one hyphen and upper case becomes lower case;
 * characters a slug cannot hold are dropped, runs of hyphens fold into one, and leading hyphens go.
 * "My  Great Pipeline" → "my-great-pipeline".
 */
export function derivePipelineSlug(name: string): string {
  return name
    .trim()
    .toLowerCase()
    .replace(/\s+/g, "-")
    .replace(/[^a-z0-9-]/g, "")
    .replace(/-{2,}/g, "-")
    .replace(/^-+/, "")
    .slice(0, MAX_PIPELINE_SLUG_LENGTH);
}

/** Why a pipeline slug is unacceptable, or undefined when it is fine. */
export function pipelineSlugProblem(slug: string): string | undefined {
  if (slug === "") return "can't be blank";
  if (slug.length > MAX_PIPELINE_SLUG_LENGTH) return `is too long (maximum is ${MAX_PIPELINE_SLUG_LENGTH} characters)`;
  if (!SLUG_RE.test(slug)) return "may only contain alphanumeric characters or dashes, and cannot begin with a dash";
  return undefined;
}
