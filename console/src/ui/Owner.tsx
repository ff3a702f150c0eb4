// A conversation's owner, shown to admins only: a user's conversations are all
// their own, so the owner would always be them.
import type { Principal } from "../api/types.ts";

export function showsOwners(principal: Principal | null): boolean {
  return principal?.role === "ADMIN";
}

/** The owner's id, or "no owner" for a conversation from before owners were recorded. */
export function OwnerTag({ owner }: { owner: string | null }) {
  return (
    <span class={owner === null ? "owner owner-none" : "owner"} title={owner === null ? "Created before owners were recorded" : `Owned by ${owner}`}>
      {owner === null ? "no owner" : `owner ${owner}`}
    </span>
  );
}
