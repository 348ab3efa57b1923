/**
 * The markers that keep a commit or pull request from being built: `[ci skip]`, `[skip ci]`, `[ci-skip]` and
 * `[skip-ci]` anywhere in a commit message or a pull request's title, in any case (docs/webhooks.md).
 */
const MARKER = /\[(ci skip|skip ci|ci-skip|skip-ci)\]/i;

/** The first skip marker in `text` as it is written there, or null when there is none. */
export function skipMarkerIn(text: string): string | null {
  return MARKER.exec(text)?.[0] ?? null;
}
