// The API key store's conformance suite: every ApiKeyStore backend must pass it.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NotFoundError } from "../../src/domain/errors.ts";
import type { ApiKeyStore, NewApiKey } from "../../src/storage/api-keys/types.ts";
import type { StorageBackend, TestStorage } from "./backends.ts";
import { SERVICES_TIMEOUT_MS } from "../../testkit/services.ts";

export function describeApiKeyStoreConformance(backend: StorageBackend) {
  describe(`ApiKeyStore conformance: ${backend.name}`, () => {
    let opened: TestStorage;
    let store: ApiKeyStore;
    beforeAll(async () => {
      opened = await backend.open();
      store = opened.storage.apiKeys;
    }, SERVICES_TIMEOUT_MS);
    afterAll(() => opened?.close());

    const at = (minute: number, ms = 0) => new Date(Date.UTC(2026, 11, 1, 21, minute, 0, ms));
    const newKey = (overrides: Partial<NewApiKey> = {}): NewApiKey => ({
      id: randomUUID(),
      hash: randomUUID().replace(/-/g, "").repeat(2),
      userId: "alice",
      role: "user",
      label: null,
      createdAt: at(0),
      ...overrides,
    });

    it("stores a key and finds it by its hash, with nothing used or revoked yet", async () => {
      const key = newKey({ label: "laptop", createdAt: at(1, 123) });
      const created = await store.create(key);
      expect(created).toEqual({ ...key, lastUsedAt: null, revokedAt: null });
      expect(await store.findByHash(key.hash)).toEqual(created);
      expect(await store.findByHash("0".repeat(64))).toBeNull();
    });

    it("refuses a second key with the same hash, and a role other than user or admin", async () => {
      const key = newKey();
      await store.create(key);
      await expect(store.create(newKey({ hash: key.hash }))).rejects.toThrow();
      await expect(store.create(newKey({ role: "root" as never }))).rejects.toThrow();
      expect((await store.list()).filter((k) => k.hash === key.hash)).toHaveLength(1);
    });

    it("lists every key oldest first, admins' and revoked ones too", async () => {
      const first = await store.create(newKey({ userId: "list-a", createdAt: at(2) }));
      const second = await store.create(newKey({ userId: "list-b", role: "admin", label: "ci", createdAt: at(3) }));
      await store.revoke(first.id, at(4));
      const listed = (await store.list()).filter((k) => k.userId.startsWith("list-"));
      expect(listed.map((k) => [k.userId, k.role, k.label, k.revokedAt])).toEqual([
        ["list-a", "user", null, at(4)],
        ["list-b", "admin", "ci", null],
      ]);
      expect(listed[1]).toEqual(second);
      const all = await store.list();
      expect(all.map((k) => k.createdAt.getTime())).toEqual([...all.map((k) => k.createdAt.getTime())].sort((a, b) => a - b));
    });

    it("revokes a key once: revoking it again keeps the first time, and an unknown id is NotFoundError", async () => {
      const key = await store.create(newKey());
      const revoked = await store.revoke(key.id, at(5));
      expect(revoked).toEqual({ ...key, revokedAt: at(5) });
      expect((await store.revoke(key.id, at(6))).revokedAt).toEqual(at(5));
      expect((await store.findByHash(key.hash))?.revokedAt).toEqual(at(5));
      const unknown = randomUUID();
      const error = await store.revoke(unknown, at(6)).catch((e) => e);
      expect(error).toBeInstanceOf(NotFoundError);
      expect(error).toMatchObject({ code: "NOT_FOUND", entity: "ApiKey", id: unknown });
    });

    it("records when a key was last used, never moving it back, and ignores an unknown id", async () => {
      const key = await store.create(newKey());
      await store.touch(key.id, at(7, 250));
      expect((await store.findByHash(key.hash))?.lastUsedAt).toEqual(at(7, 250));
      await store.touch(key.id, at(6));
      expect((await store.findByHash(key.hash))?.lastUsedAt).toEqual(at(7, 250));
      await store.touch(key.id, at(8));
      expect((await store.findByHash(key.hash))?.lastUsedAt).toEqual(at(8));
      await expect(store.touch(randomUUID(), at(9))).resolves.toBeUndefined();
    });
  });
}
