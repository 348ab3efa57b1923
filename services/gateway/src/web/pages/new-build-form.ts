import type { Pipeline } from "@conveyor/proto/pipelines";
import { html, type SafeHtml } from "../html.js";
import { pipelinePath } from "../paths.js";

/** The new build form's fields as the person typed them, and what was wrong with them. */
export interface NewBuildForm {
  message: string;
  commit: string;
  branch: string;
  /** KEY=value lines. */
  env: string;
  /** key=value lines. */
  metaData: string;
  /** Sentences saying what the builds service (or the form's reading) refused. */
  errors: string[];
}

/** Where the new build form posts: the pipeline's builds, as the REST API's create. */
export function newBuildPath(org: string, pipeline: string): string {
  return `${pipelinePath(org, pipeline)}/builds`;
}

/**
 * The new build form, folded away until opened (open when it comes back with errors): message, commit, branch,
 * environment and meta-data lines. The branch defaults to the pipeline's default branch and the commit to HEAD, as
 * Buildkite's dialog does.
 */
export function renderNewBuildForm(
  org: string,
  pipeline: Pipeline,
  form: NewBuildForm | undefined,
  csrf: SafeHtml,
): SafeHtml {
  const v = form ?? { message: "", commit: "HEAD", branch: pipeline.defaultBranch, env: "", metaData: "", errors: [] };
  const errors =
    v.errors.length > 0
      ? html`<div class="form-errors" role="alert" id="new-build-errors">
      <strong>The build could not be created:</strong>
      <ul>${v.errors.map((e) => html`<li>${e}</li>`)}</ul>
    </div>`
      : null;
  return html`<details class="panel new-build"${v.errors.length > 0 ? html` open` : null}>
  <summary class="panel-head"><strong>New build</strong></summary>
  <div class="panel-body">
    ${errors}
    <form class="stacked" method="post" action="${newBuildPath(org, pipeline.slug)}">
      ${csrf}
      <div class="field">
        <label for="new-build-message">Message</label>
        <input type="text" id="new-build-message" name="message" value="${v.message}">
      </div>
      <div class="field">
        <label for="new-build-commit">Commit</label>
        <input type="text" id="new-build-commit" name="commit" value="${v.commit}" required>
      </div>
      <div class="field">
        <label for="new-build-branch">Branch</label>
        <input type="text" id="new-build-branch" name="branch" value="${v.branch}" required>
      </div>
      <div class="field">
        <label for="new-build-env">Environment variables <small>one KEY=value per line</small></label>
        <textarea id="new-build-env" name="env" rows="3">${v.env}</textarea>
      </div>
      <div class="field">
        <label for="new-build-meta-data">Meta-data <small>one key=value per line</small></label>
        <textarea id="new-build-meta-data" name="meta_data" rows="3">${v.metaData}</textarea>
      </div>
      <div class="actions"><button type="submit" class="primary">Create build</button></div>
    </form>
  </div>
</details>`;
}

/**
 * Reads KEY=value lines (the form's environment and meta-data) into a map: blank lines are skipped, the value is
 * everything after the first `=`, and a line without one, or with an empty key, is an error naming its line.
 */
export function readKeyValueLines(text: string, what: string): { values: Record<string, string>; errors: string[] } {
  const values: Record<string, string> = {};
  const errors: string[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === "") return;
    const eq = line.indexOf("=");
    const key = eq === -1 ? "" : line.slice(0, eq).trim();
    if (key === "") errors.push(`${what} line ${i + 1} must be KEY=value`);
    else values[key] = line.slice(eq + 1);
  });
  return { values, errors };
}
