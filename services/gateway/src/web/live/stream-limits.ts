/** How many live streams one gateway holds open: per person, and in all. */
export interface StreamLimitSettings {
  perPerson: number;
  total: number;
}

/** A stream admitted: release it when it ends. Or refused: 429 (the person's limit) or 503 (the gateway's). */
export type Admission = { release(): void } | { refused: 429 | 503 };

/** The live streams this gateway holds open, counted. */
export interface StreamLimits {
  admit(person: string): Admission;
  /** Streams open now, in all. */
  open(): number;
}

/**
 * Counts open live streams per person and in all, and refuses one more past either bound: a person's many tabs (or
 * a script) cannot take the gateway's streams from everyone else, and the gateway's memory stays bounded (each
 * stream's buffers are bounded too: sse-writer.ts, log-assembler.ts). Refused streams are told when to try again.
 */
export function createStreamLimits(settings: StreamLimitSettings): StreamLimits {
  const perPerson = new Map<string, number>();
  let total = 0;
  return {
    admit(person) {
      if (total >= settings.total) return { refused: 503 };
      const held = perPerson.get(person) ?? 0;
      if (held >= settings.perPerson) return { refused: 429 };
      perPerson.set(person, held + 1);
      total++;
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          total--;
          const left = (perPerson.get(person) ?? 1) - 1;
          if (left > 0) perPerson.set(person, left);
          else perPerson.delete(person);
        },
      };
    },
    open: () => total,
  };
}
