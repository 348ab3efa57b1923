import type { BuildUser } from "@conveyor/proto/builds";
import type { User } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { Nullable, NullableStr, NullableTimestamp, Str } from "./schemas.js";
import { graphqlId } from "./urls.js";

/** The User object embedded as `creator` and `created_by`. */
export function renderUser(u: User): UserBody {
  return {
    id: u.id,
    graphql_id: graphqlId("User", u.id),
    name: u.name,
    email: u.email,
    avatar_url: u.avatarUrl === "" ? null : u.avatarUrl,
    created_at: isoTime(u.createdAt),
  };
}

export const UserSchema = Type.Object({
  id: Str,
  graphql_id: Str,
  name: Str,
  email: Str,
  avatar_url: NullableStr,
  created_at: NullableTimestamp,
});
export type UserBody = Static<typeof UserSchema>;

/** An organization member: the user's id, name and email. */
export function renderMember(u: User): MemberBody {
  return { id: u.id, name: u.name, email: u.email };
}

export const MemberSchema = Type.Object({ id: Str, name: Str, email: Str });
export type MemberBody = Static<typeof MemberSchema>;

/** A user a build or job recorded (creator, retried_by, unblocked_by), or null. */
export function renderBuildUser(u: BuildUser | undefined): UserBody | null {
  if (!u?.id) return null;
  return {
    id: u.id,
    graphql_id: graphqlId("User", u.id),
    name: u.name,
    email: u.email,
    avatar_url: u.avatarUrl === "" ? null : u.avatarUrl,
    created_at: isoTime(u.createdAt),
  };
}

/** A recorded user, or null. */
export const NullableUserSchema = Nullable(UserSchema);
