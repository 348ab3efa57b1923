import type { ServiceImpl } from "@connectrpc/connect";
import type { RulesService } from "@conveyor/proto/identity";
import {
  failedPrecondition,
  isUuid,
  newId,
  notFound,
  pageWindow,
  permissionDenied,
  toTimestamp,
} from "@conveyor/runtime";
import { canManageOrganizationSettings } from "../domain/access-policy.js";
import { DuplicateError, type IdentityRepository, type UserDoc } from "../store/identity-repository.js";
import type { RuleDoc, RuleRepository } from "../store/rule-repository.js";
import { createActors } from "./actors.js";
import { userMessage } from "./identity-message.js";

/** The rule types that exist, "<source_type>.<action>.<target_type>". */
const RULE_TYPES = ["pipeline.trigger_build.pipeline", "pipeline.artifacts_read.pipeline"] as const;

/** What the rules RPCs work with. */
export interface RuleRpcsDeps {
  identity: IdentityRepository;
  rules: RuleRepository;
  now: () => Date;
}

const ruleMessage = (r: RuleDoc, creator: UserDoc | undefined) => ({
  id: r._id,
  organizationId: r.organizationId,
  type: r.type,
  sourceType: r.sourceType,
  sourceId: r.sourceId,
  action: r.action,
  targetType: r.targetType,
  targetId: r.targetId,
  effect: r.effect,
  conditions: r.conditions,
  createdAt: toTimestamp(r.createdAt),
  ...(creator ? { createdBy: userMessage(creator) } : {}),
});

/** The rules service's RPCs: rules allowing actions between resources of an organization. */
export function createRuleRpcs(deps: RuleRpcsDeps): ServiceImpl<typeof RulesService> {
  const { identity, rules, now } = deps;

  const { actorOf } = createActors(identity);

  const creatorsOf = async (docs: RuleDoc[]) => {
    const ids = [...new Set(docs.map((r) => r.createdBy).filter(isUuid))];
    return new Map((await identity.findUsers(ids)).map((u) => [u._id, u]));
  };

  const requireRule = async (organizationId: string, id: string) => {
    const rule = isUuid(id) ? await rules.findRule(organizationId, id.toLowerCase()) : null;
    if (!rule) throw notFound("rule");
    return rule;
  };

  return {
    async createRule(req) {
      if (!canManageOrganizationSettings(await actorOf(req.organizationId, req.actorId))) {
        throw permissionDenied();
      }
      const type = req.type.trim();
      if (!(RULE_TYPES as readonly string[]).includes(type)) {
        throw failedPrecondition(
          type === ""
            ? `Rule type can't be blank: use one of ${RULE_TYPES.join(", ")}`
            : `Rule type ${type} is not available: use one of ${RULE_TYPES.join(", ")}`,
        );
      }
      const [sourceType = "", action = "", targetType = ""] = type.split(".");
      const problems = [];
      if (!isUuid(req.sourceId)) problems.push(`Source ${sourceType} can't be blank`);
      if (!isUuid(req.targetId)) problems.push(`Target ${targetType} can't be blank`);
      if (problems.length > 0) throw failedPrecondition(problems.join(", "));
      const rule: RuleDoc = {
        _id: newId(),
        organizationId: req.organizationId,
        type,
        sourceType,
        sourceId: req.sourceId.toLowerCase(),
        action,
        targetType,
        targetId: req.targetId.toLowerCase(),
        effect: "allow",
        conditions: req.conditions.map((c) => c.trim()).filter((c) => c !== ""),
        createdAt: now(),
        createdBy: req.actorId,
      };
      try {
        await rules.insertRule(rule);
      } catch (err) {
        if (err instanceof DuplicateError) {
          throw failedPrecondition(`A ${type} rule between this source and target already exists`);
        }
        throw err;
      }
      const creator = isUuid(req.actorId) ? ((await identity.findUser(req.actorId)) ?? undefined) : undefined;
      return { rule: ruleMessage(rule, creator) };
    },

    async getRule(req) {
      const rule = await requireRule(req.organizationId, req.id);
      return { rule: ruleMessage(rule, (await creatorsOf([rule])).get(rule.createdBy)) };
    },

    async listRules(req) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await rules.listRules(req.organizationId, skip, perPage);
      const creators = await creatorsOf(page.items);
      return { rules: page.items.map((r) => ruleMessage(r, creators.get(r.createdBy))), totalCount: page.total };
    },

    async checkRule(req) {
      if (!isUuid(req.sourceId) || !isUuid(req.targetId)) return { allowed: false, ruleId: "" };
      const rule = await rules.findRuleBetween(
        req.organizationId,
        req.type,
        req.sourceId.toLowerCase(),
        req.targetId.toLowerCase(),
      );
      // Conditions are expressions over the acting build, which this check does not see: such a rule allows nothing
      // here rather than everything.
      if (!rule || rule.conditions.length > 0) return { allowed: false, ruleId: "" };
      return { allowed: true, ruleId: rule._id };
    },

    async deleteRule(req) {
      if (!canManageOrganizationSettings(await actorOf(req.organizationId, req.actorId))) {
        await requireRule(req.organizationId, req.id);
        throw permissionDenied();
      }
      const rule = await requireRule(req.organizationId, req.id);
      if (!(await rules.deleteRule(req.organizationId, rule._id))) throw notFound("rule");
      return {};
    },
  };
}
