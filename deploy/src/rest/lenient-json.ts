/** A response body as JSON, or undefined when it is empty or not JSON (a client judging any answer it gets). */
export function lenientJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
