import { SuiteAccessLevel } from "@conveyor/proto/identity";
import { SUITE_ACCESS_LEVELS, type SuiteLevelName } from "@conveyor/runtime";

/** Suite access levels as stored: each once, read before edit; undefined when empty or any is unspecified. */
export function suiteLevelNames(levels: readonly SuiteAccessLevel[]): SuiteLevelName[] | undefined {
  if (levels.length === 0 || levels.some((l) => l !== SuiteAccessLevel.READ && l !== SuiteAccessLevel.EDIT)) {
    return undefined;
  }
  return SUITE_ACCESS_LEVELS.names.filter((name) => levels.includes(SUITE_ACCESS_LEVELS.valueOf(name)));
}
