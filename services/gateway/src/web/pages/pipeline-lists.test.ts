import { create } from "@bufbuild/protobuf";
import { ListPipelinesResponseSchema, PipelineSchema } from "@conveyor/proto/pipelines";
import { createPipelineLists } from "./pipeline-lists.js";

/** A list call over named pipelines that counts its calls; `hold` makes the next call wait until released. */
function fakeList() {
  let names = ["web"];
  let calls = 0;
  let held: Promise<void> | undefined;
  const list = async () => {
    calls++;
    const answer = create(ListPipelinesResponseSchema, {
      pipelines: names.map((name) => create(PipelineSchema, { id: `p-${name}`, name })),
      totalCount: names.length,
    });
    await held;
    return answer;
  };
  return {
    list,
    calls: () => calls,
    rename: (next: string[]) => {
      names = next;
    },
    hold() {
      let release: () => void = () => {};
      held = new Promise((resolve) => {
        release = resolve;
      });
      return () => {
        held = undefined;
        release();
      };
    },
  };
}

const req = (pipelineIds: string[] = []) => ({
  organizationId: "o-1",
  archiveFilter: 0,
  page: 1,
  perPage: 30,
  pipelineIds,
});

function changes() {
  const listeners: Array<() => void> = [];
  return {
    on: (l: () => void) => {
      listeners.push(l);
    },
    change: () => {
      for (const l of listeners) l();
    },
  };
}

describe("createPipelineLists", () => {
  it("keeps a list until a pipeline changes, apart for each set of pipelines a person may read", async () => {
    const fake = fakeList();
    const told = changes();
    const lists = createPipelineLists(fake.list, told.on);
    await lists(req());
    await lists(req());
    await lists(req(["b", "a"]));
    await lists(req(["a", "b"]));
    expect(fake.calls()).toBe(2);
    fake.rename(["api"]);
    told.change();
    expect((await lists(req())).pipelines.map((p) => p.name)).toEqual(["api"]);
    expect(fake.calls()).toBe(3);
  });

  it("does not keep a list read under way when a change is told", async () => {
    const fake = fakeList();
    const told = changes();
    const lists = createPipelineLists(fake.list, told.on);
    const release = fake.hold();
    const early = lists(req());
    await new Promise((resolve) => setImmediate(resolve));
    fake.rename(["web", "new"]);
    told.change();
    release();
    expect((await early).pipelines.map((p) => p.name)).toEqual(["web"]);
    expect((await lists(req())).pipelines.map((p) => p.name)).toEqual(["web", "new"]);
  });

  it("keeps nothing without a source of changes", async () => {
    const fake = fakeList();
    const lists = createPipelineLists(fake.list);
    await lists(req());
    await lists(req());
    expect(fake.calls()).toBe(2);
  });
});
