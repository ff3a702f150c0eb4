// Who is calling: `me`, the principal the operation runs as (src/domain/principal.ts).
import type { Principal as PrincipalShape } from "../domain/principal.ts";
import { builder } from "./builder.ts";

const PrincipalRole = builder.enumType("PrincipalRole", {
  description: "USER sees and acts on their own conversations; ADMIN on every one.",
  values: { USER: { value: "user" }, ADMIN: { value: "admin" } } as const,
});

const Principal = builder.objectRef<PrincipalShape>("Principal").implement({
  description: "The caller: who the credential stands for (a JWT's user claim, an API key's user, `admin` for API_TOKEN, `local` without authentication).",
  fields: (t) => ({
    id: t.exposeString("id", { description: "The id conversations record as their owner." }),
    role: t.field({ type: PrincipalRole, resolve: (p) => p.role }),
  }),
});

builder.queryField("me", (t) =>
  t.field({
    type: Principal,
    description: "Who this operation runs as.",
    resolve: (_root, _args, ctx) => ctx.principal,
  }),
);
