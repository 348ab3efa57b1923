import { Role } from "@conveyor/proto/identity";
import { PipelineChangedSchema, PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import { decodeEvent } from "@conveyor/runtime";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { arrangeCluster, arrangeOrgUser, send } from "./support/stack-env.js";

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connect({ servers: process.env.NATS_URL ?? "" });
});
afterAll(() => nc.close());

describe("pipeline events on NATS", () => {
  it("announces create, update, archive, unarchive and delete with the pipeline after the change", async () => {
    const org = await arrangeOrgUser({ scopes: ["read_pipelines", "write_pipelines"], role: Role.ADMIN });
    const cluster = await arrangeCluster(org.organization.id);
    const seen: Array<{ subject: string; slug: string; archived: boolean }> = [];
    const sub = nc.subscribe("ci.pipelines.>");
    const done = (async () => {
      for await (const msg of sub) {
        if (msg.subject.endsWith("pipeline_deleted")) {
          const e = decodeEvent(PipelineDeletedSchema, msg.data);
          if (e.organizationId === org.organization.id)
            seen.push({ subject: msg.subject, slug: e.slug, archived: false });
          if (seen.length >= 5) break;
          continue;
        }
        const p = decodeEvent(PipelineChangedSchema, msg.data).pipeline;
        if (p?.organizationId === org.organization.id) {
          seen.push({ subject: msg.subject, slug: p.slug, archived: p.archivedAt !== undefined });
        }
      }
    })();
    await nc.flush();
    const path = `/v2/organizations/${org.organization.slug}/pipelines`;
    await send("POST", path, org.secret, {
      name: "Evented",
      repository: "r",
      cluster_id: cluster,
      configuration: "steps:\n  - wait\n",
    });
    await send("PATCH", `${path}/evented`, org.secret, { name: "Evented Two" });
    await send("POST", `${path}/evented-two/archive`, org.secret);
    await send("POST", `${path}/evented-two/unarchive`, org.secret);
    await send("DELETE", `${path}/evented-two`, org.secret);
    await Promise.race([done, new Promise((r) => setTimeout(r, 5_000))]);
    sub.unsubscribe();
    expect(seen).toEqual([
      { subject: "ci.pipelines.pipeline_created", slug: "evented", archived: false },
      { subject: "ci.pipelines.pipeline_updated", slug: "evented-two", archived: false },
      { subject: "ci.pipelines.pipeline_archived", slug: "evented-two", archived: true },
      { subject: "ci.pipelines.pipeline_unarchived", slug: "evented-two", archived: false },
      { subject: "ci.pipelines.pipeline_deleted", slug: "evented-two", archived: false },
    ]);
  });
});
