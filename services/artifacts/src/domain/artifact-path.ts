/** The longest artifact path accepted, in characters. */
export const MAX_PATH_LENGTH = 1024;

/** Why a path is refused, as a field error code; undefined when it is acceptable. */
export function pathProblem(path: string): string | undefined {
  if (path.trim() === "") return "can't be blank";
  if (Array.from(path).length > MAX_PATH_LENGTH) return `is longer than ${MAX_PATH_LENGTH} characters`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused here
  if (/[\u0000-\u001f\u007f]/.test(path)) return "contains control characters";
  if (path.startsWith("/") || path.startsWith("\\") || /^[A-Za-z]:/.test(path)) return "must be relative";
  if (path.split(/[/\\]/).some((segment) => segment === "..")) return "must not contain ..";
  return undefined;
}
