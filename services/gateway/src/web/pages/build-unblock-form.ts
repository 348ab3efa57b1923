import type { BlockField, Job } from "@conveyor/proto/builds";
import { html, type SafeHtml } from "../html.js";

/** An unblock the builds service refused for its values: what the person entered and what was wrong. */
export interface UnblockAttempt {
  jobId: string;
  /** Field key → the values submitted. */
  values: Record<string, string[]>;
  /** The problems, as the builds service names them (`fields.<key>`, or another field). */
  errors: Array<{ field: string; code: string }>;
}

/** The form's input name of a field. */
export const fieldInputName = (key: string) => `field:${key}`;

/** The longest list of values one field takes from a form (REST's bound, MAX_FIELD_VALUES in rest/jobs.ts). */
const MAX_VALUES = 100;

/**
 * The submitted fields of an unblock form's body: every `field:<key>` input, a list for a multiple select (its
 * hidden empty input first, so that choosing nothing is told from leaving the field out, which takes its default).
 */
export function submittedFields(body: unknown): Record<string, string[]> {
  const fields: Record<string, string[]> = {};
  if (!body || typeof body !== "object") return fields;
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    if (!name.startsWith("field:")) continue;
    const values = (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === "string");
    fields[name.slice("field:".length)] = values.slice(0, MAX_VALUES);
  }
  return fields;
}

/** One field's input, with its label, hint and problem; `values` are the submitted ones, or the defaults. */
function fieldInput(job: Job, field: BlockField, values: readonly string[], problem: string | undefined): SafeHtml {
  const id = `unblock-${job.id}-${field.key}`;
  const name = fieldInputName(field.key);
  const hint = [field.hint, field.format ? `Format: ${field.format}` : ""].filter((h) => h !== "").join(" · ");
  const described = [hint ? `${id}-hint` : "", problem ? `${id}-problem` : ""].filter((d) => d !== "").join(" ");
  const aria = html`${described ? html` aria-describedby="${described}"` : ""}${problem ? html` aria-invalid="true"` : ""}`;
  const label = html`${field.label || field.key}${field.required ? html` <small>(required)</small>` : ""}`;
  const after = html`${hint ? html`<small id="${id}-hint">${hint}</small>` : ""}${problem ? html`<small class="problem" id="${id}-problem">${field.key} ${problem}</small>` : ""}`;
  if (field.kind === "select" && field.multiple) {
    const chosen = new Set(values);
    return html`<fieldset class="field"${aria}><legend>${label}</legend>
<input type="hidden" name="${name}" value="">
${field.options.map(
  (o, i) =>
    html`<label class="checkbox"><input type="checkbox" id="${id}-${i}" name="${name}" value="${o.value}"${chosen.has(o.value) ? html` checked` : ""}> ${o.label}</label>`,
)}
${after}</fieldset>`;
  }
  if (field.kind === "select") {
    const chosen = values[0] ?? "";
    return html`<div class="field"><label for="${id}">${label}</label>
<select id="${id}" name="${name}"${field.required ? html` required` : ""}${aria}>
${field.required && chosen !== "" ? "" : html`<option value="">(none)</option>`}
${field.options.map((o) => html`<option value="${o.value}"${o.value === chosen ? html` selected` : ""}>${o.label}</option>`)}
</select>${after}</div>`;
  }
  return html`<div class="field"><label for="${id}">${label}</label>
<input type="text" id="${id}" name="${name}" value="${values[0] ?? ""}"${field.required ? html` required` : ""}${aria}>${after}</div>`;
}

/**
 * The form that unblocks a block step, posting to `action`: each of the step's fields (text, select, multiple
 * select) with its default or the values just refused, and the problems the builds service found with them.
 */
export function renderUnblockForm(
  job: Job,
  action: string,
  ctx: { csrf: SafeHtml; unblock?: UnblockAttempt | undefined },
): SafeHtml {
  const attempt = ctx.unblock?.jobId === job.id ? ctx.unblock : undefined;
  const fields = job.block?.fields ?? [];
  const problemOf = (key: string) => attempt?.errors.find((e) => e.field === `fields.${key}`)?.code;
  const errors =
    attempt && attempt.errors.length > 0
      ? html`<div class="form-errors" role="alert"><p>The step was not unblocked:</p><ul>${attempt.errors.map((e) => html`<li>${e.field} ${e.code}</li>`)}</ul></div>`
      : "";
  return html`<form method="post" action="${action}" class="stacked unblock-form">${ctx.csrf}
${errors}
${fields.map((f) => fieldInput(job, f, attempt?.values[f.key] ?? f.defaultValues, problemOf(f.key)))}
<div class="actions"><button type="submit" class="primary">${job.block?.submit || "Continue"}</button></div>
</form>`;
}
