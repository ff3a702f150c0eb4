// Who is signed in, in the header: the principal's id and role as the API
// answers `me` (whatever the credential: API_TOKEN, a JWT, an API key, or
// none), and the action that forgets the credential.
import type { Principal } from "../api/types.ts";

export function SignedIn(props: { principal: Principal | null; error: string | null; onForgetToken: (() => void) | null }) {
  const { principal, error, onForgetToken } = props;
  return (
    <span class="signed-in">
      {principal ? (
        <span role="status" aria-label="Signed in as" class="principal" title={`Signed in as ${principal.id} (${principal.role})`}>
          {principal.id} · {principal.role.toLowerCase()}
        </span>
      ) : error ? (
        <span role="alert" class="notice">
          {error}
        </span>
      ) : null}
      {onForgetToken && (
        <button type="button" class="link" onClick={onForgetToken}>
          Forget token
        </button>
      )}
    </span>
  );
}
