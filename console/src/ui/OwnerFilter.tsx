// An admin's filter of the conversation list by owner (conversations(owner:)):
// an owner's id, typed or picked from the owners listed; empty for everyone's.
import { useState } from "preact/hooks";

export function OwnerFilter(props: { owner: string | null; known: readonly string[]; onChange: (owner: string | null) => void }) {
  const [draft, setDraft] = useState(props.owner ?? "");
  return (
    <form
      aria-label="Filter by owner"
      class="owner-filter"
      onSubmit={(event) => {
        event.preventDefault();
        props.onChange(draft.trim() || null);
      }}
    >
      <label>
        Owner
        <input list="known-owners" placeholder="everyone" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
      </label>
      <datalist id="known-owners">
        {props.known.map((owner) => (
          <option key={owner} value={owner} />
        ))}
      </datalist>
      <button type="submit">Filter</button>
      {props.owner !== null && (
        <button
          type="button"
          class="link"
          onClick={() => {
            setDraft("");
            props.onChange(null);
          }}
        >
          Everyone
        </button>
      )}
    </form>
  );
}
