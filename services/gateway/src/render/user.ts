import type { User } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { nullableStr, nullableTimestamp, object, str } from "./schemas.js";
import { graphqlId } from "./urls.js";

/** The User object embedded as `creator` and `created_by`. */
export function renderUser(u: User) {
  return {
    id: u.id,
    graphql_id: graphqlId("User", u.id),
    name: u.name,
    email: u.email,
    avatar_url: u.avatarUrl === "" ? null : u.avatarUrl,
    created_at: isoTime(u.createdAt),
  };
}

export const userSchema = object({
  id: str,
  graphql_id: str,
  name: str,
  email: str,
  avatar_url: nullableStr,
  created_at: nullableTimestamp,
});

/** An organization member: the user's id, name and email. */
export function renderMember(u: User) {
  return { id: u.id, name: u.name, email: u.email };
}

export const memberSchema = object({ id: str, name: str, email: str });
