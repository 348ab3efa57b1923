import { DuplicateError } from "./identity-repository.js";
import type { RuleDoc, RuleRepository } from "./rule-repository.js";

const copy = <T>(v: T): T => structuredClone(v);

/** An in-memory RuleRepository with the same unique rule as the MongoDB one, for unit tests. */
export function createMemoryRuleRepository(): RuleRepository {
  let rules: RuleDoc[] = [];
  return {
    async insertRule(rule) {
      const clash = rules.some(
        (r) =>
          r.organizationId === rule.organizationId &&
          r.type === rule.type &&
          r.sourceId === rule.sourceId &&
          r.targetId === rule.targetId,
      );
      if (clash) throw new DuplicateError("rule");
      rules.push(copy(rule));
    },
    findRule: async (organizationId, id) =>
      copy(rules.find((r) => r._id === id && r.organizationId === organizationId) ?? null),
    findRuleBetween: async (organizationId, type, sourceId, targetId) =>
      copy(
        rules.find(
          (r) =>
            r.organizationId === organizationId &&
            r.type === type &&
            r.sourceId === sourceId &&
            r.targetId === targetId,
        ) ?? null,
      ),
    async listRules(organizationId, skip, limit) {
      const mine = rules
        .filter((r) => r.organizationId === organizationId)
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a._id < b._id ? -1 : 1));
      return { items: mine.slice(skip, skip + limit).map(copy), total: mine.length };
    },
    async deleteRule(organizationId, id) {
      const before = rules.length;
      rules = rules.filter((r) => !(r._id === id && r.organizationId === organizationId));
      return rules.length < before;
    },
    async removeRulesOf(resourceId) {
      rules = rules.filter((r) => r.sourceId !== resourceId && r.targetId !== resourceId);
    },
  };
}
