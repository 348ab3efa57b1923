/**
 * `*` wildcard matching without regular expressions: a pattern is split at its stars into literal pieces, the first
 * must start the text, the last must end it, and the ones between are found left to right. Leftmost placement is
 * always right for star-only patterns, so no backtracking happens and the cost grows with the lengths of the pattern
 * and the text, never exponentially (a backtracking regex for "*a*a*a*b" against "aaaa…" doubles with every "a").
 */

/** A star-only pattern, split once for matching against many texts. */
export interface Wildcard {
  /** The literal pieces between stars; one piece means no star. */
  readonly pieces: readonly string[];
}

/** Splits a pattern in which `*` matches any run of characters (including none) and everything else is literal. */
export function compileWildcard(pattern: string): Wildcard {
  return { pieces: pattern.split("*") };
}

/** Whether `text` matches the compiled star-only pattern as a whole. */
export function matchesWildcard(wildcard: Wildcard, text: string): boolean {
  const { pieces } = wildcard;
  const first = pieces[0] ?? "";
  if (pieces.length === 1) return text === first;
  const last = pieces[pieces.length - 1] ?? "";
  if (text.length < first.length + last.length) return false;
  if (!text.startsWith(first) || !text.endsWith(last)) return false;
  let at = first.length;
  const end = text.length - last.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const piece = pieces[i] ?? "";
    if (piece === "") continue;
    const found = text.indexOf(piece, at);
    if (found < 0 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}

/** Whether `text` matches the star-only `pattern` as a whole. */
export function wildcardMatch(pattern: string, text: string): boolean {
  return matchesWildcard(compileWildcard(pattern), text);
}
