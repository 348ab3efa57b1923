import { createAnsiToHtml } from "./ansi-html.js";
import { renderLogStream } from "./log-html.js";
import { type JobLogRef, linesOf, openLog, planLog, type StreamJobLog } from "./log-reader.js";

/**
 * A whole job log as HTML, numbered from its first line, in pieces as it is read: what is held at once is one of
 * the builds service's pieces and its lines, however long the log. It is read twice: once for its group markers
 * (which groups are open depends on the whole log), then to render it. `signal` ends both reads (a client gone).
 */
export async function* renderWholeLog(stream: StreamJobLog, ref: JobLogRef, signal?: AbortSignal) {
  const plan = await planLog(stream, ref, signal);
  const { pieces } = await openLog(stream, ref, {}, signal);
  yield* renderLogStream(linesOf(pieces), plan, { ansi: createAnsiToHtml(), firstLineNumber: 1 });
}
