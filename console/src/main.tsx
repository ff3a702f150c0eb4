// The runledger console: a page served by runledger itself (GET /console) that
// follows conversations, runs and checkpoints through GraphQL subscriptions.
import { render } from "preact";
import { App } from "./ui/App.tsx";
import "./styles.css";

const root = document.getElementById("app")!;
// The page's "Loading" placeholder is not Preact's to diff against.
root.replaceChildren();
render(<App />, root);
