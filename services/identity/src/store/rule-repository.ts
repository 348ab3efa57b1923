import type { Collection, Db } from "mongodb";
import { insertUnique, type Page } from "./identity-repository.js";

export interface RuleDoc {
  _id: string;
  organizationId: string;
  /** "<sourceType>.<action>.<targetType>". */
  type: string;
  sourceType: string;
  sourceId: string;
  action: string;
  targetType: string;
  targetId: string;
  effect: "allow";
  conditions: string[];
  createdAt: Date;
  /** The creating user's UUID; empty when an operator tool created the rule. */
  createdBy: string;
}

/** Persistence of rules. */
export interface RuleRepository {
  /** A second rule with the same organization, type, source and target is a DuplicateError. */
  insertRule(rule: RuleDoc): Promise<void>;
  findRule(organizationId: string, id: string): Promise<RuleDoc | null>;
  /** The rule of a type between a source and a target, or null (one read on the unique index). */
  findRuleBetween(organizationId: string, type: string, sourceId: string, targetId: string): Promise<RuleDoc | null>;
  listRules(organizationId: string, skip: number, limit: number): Promise<Page<RuleDoc>>;
  deleteRule(organizationId: string, id: string): Promise<boolean>;
  /** Drops every rule whose source or target is a resource that no longer exists. */
  removeRulesOf(resourceId: string): Promise<void>;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoRuleRepository(db: Db): Promise<RuleRepository> {
  const rules: Collection<RuleDoc> = db.collection("rules");
  await Promise.all([
    rules.createIndex(
      { organizationId: 1, type: 1, sourceId: 1, targetId: 1 },
      { unique: true, name: "org_type_source_target_unique" },
    ),
    rules.createIndex({ organizationId: 1, createdAt: 1, _id: 1 }, { name: "org_rules_in_order" }),
    rules.createIndex({ sourceId: 1 }, { name: "rules_by_source" }),
    rules.createIndex({ targetId: 1 }, { name: "rules_by_target" }),
  ]);
  return {
    insertRule: (rule) => insertUnique(rules, rule, "rule"),
    findRule: (organizationId, id) => rules.findOne({ _id: id, organizationId }),
    findRuleBetween: (organizationId, type, sourceId, targetId) =>
      rules.findOne({ organizationId, type, sourceId, targetId }),
    async listRules(organizationId, skip, limit) {
      const [items, total] = await Promise.all([
        rules.find({ organizationId }).sort({ createdAt: 1, _id: 1 }).skip(skip).limit(limit).toArray(),
        rules.countDocuments({ organizationId }),
      ]);
      return { items, total };
    },
    async deleteRule(organizationId, id) {
      return (await rules.deleteOne({ _id: id, organizationId })).deletedCount === 1;
    },
    async removeRulesOf(resourceId) {
      await rules.deleteMany({ $or: [{ sourceId: resourceId }, { targetId: resourceId }] });
    },
  };
}
