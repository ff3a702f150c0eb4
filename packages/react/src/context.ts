// The client the hooks below a RunledgerProvider use: one per app, made once
// (createRunledgerClient) and handed down.
import { createContext, createElement, useContext, type ReactNode } from "react";
import type { RunledgerClient } from "@runledger/client";

const ClientContext = createContext<RunledgerClient | null>(null);

export interface RunledgerProviderProps {
  client: RunledgerClient;
  children?: ReactNode;
}

/** Hands `client` to every hook below it. */
export function RunledgerProvider({ client, children }: RunledgerProviderProps): ReactNode {
  return createElement(ClientContext.Provider, { value: client }, children);
}

/** The client of the nearest RunledgerProvider. */
export function useRunledgerClient(): RunledgerClient {
  const client = useContext(ClientContext);
  if (!client) throw new Error("useRunledgerClient: no <RunledgerProvider client={...}> above this component");
  return client;
}
