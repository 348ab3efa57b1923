/**
 * The Principal of a user acting through a credential (an API access token or a session of the pages): who the
 * user is and which organizations it may reach, with the user's role and organization-wide pipeline access in each.
 */

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AccessTokenSchema, PrincipalSchema } from "@conveyor/proto/identity";
import { accessOfLevel, organizationPipelineAccess, reachableOrganizations } from "../domain/access-policy.js";
import type { IdentityRepository, UserDoc } from "../store/identity-repository.js";
import { organizationMessage, roleOf, userMessage } from "./identity-message.js";

/**
 * The principal of `user` acting through `token`: the user's memberships as they are now, narrowed to the
 * organizations of `allowList` when it is not empty.
 */
export async function principalOf(
  repo: IdentityRepository,
  user: UserDoc,
  token: MessageInitShape<typeof AccessTokenSchema>,
  allowList: readonly string[],
): Promise<MessageInitShape<typeof PrincipalSchema>> {
  const memberships = await repo.membershipsOfUser(user._id);
  const reachable = reachableOrganizations(
    memberships.map((m) => ({ organizationId: m.organizationId, role: roleOf(m.role) })),
    allowList,
  );
  const orgs = new Map((await repo.findOrganizations(reachable.map((r) => r.organizationId))).map((o) => [o._id, o]));
  const organizations = reachable.flatMap((r) => {
    const org = orgs.get(r.organizationId);
    if (!org) return [];
    const level = organizationPipelineAccess(r.role, org.teamsEnabled);
    return [
      {
        organization: organizationMessage(org),
        role: r.role,
        ...(level === undefined ? {} : { allPipelines: accessOfLevel(level) }),
      },
    ];
  });
  return { token, user: userMessage(user), organizations };
}
