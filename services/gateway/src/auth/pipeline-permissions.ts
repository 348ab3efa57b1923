import { type OrganizationAccess, Role } from "@conveyor/proto/identity";

/**
 * Whether the caller may edit, archive, unarchive or delete pipelines of an organization, and see their webhook
 * URLs. For now that is organization administrators; team-based access levels refine it in one place later.
 */
export function canEditPipelines(access: OrganizationAccess): boolean {
  return access.role === Role.ADMIN;
}

/** Whether the caller is an administrator of the organization. */
export function isOrganizationAdmin(access: OrganizationAccess): boolean {
  return access.role === Role.ADMIN;
}
