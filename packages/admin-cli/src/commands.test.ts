import { allFlags, COMMANDS, usage } from "./commands.js";

describe("COMMANDS", () => {
  it.each(Object.entries(COMMANDS))("%s: its usage names exactly the flags it takes", (key, command) => {
    expect(command.usage === key || command.usage.startsWith(`${key} `)).toBe(true);
    const named = [...command.usage.matchAll(/--([a-z-]+)/g)].map((m) => m[1]);
    expect(named.sort()).toEqual(Object.keys(command.flags).sort());
  });

  it("gives a flag name one type in every command, so that one parse serves them all", () => {
    const types = new Map<string, Set<string>>();
    for (const command of Object.values(COMMANDS)) {
      for (const [name, type] of Object.entries(command.flags))
        types.set(name, (types.get(name) ?? new Set()).add(type));
    }
    expect([...types].filter(([, t]) => t.size > 1)).toEqual([]);
    expect(allFlags()).toMatchObject({ help: "boolean", "teams-enabled": "boolean", org: "string" });
  });

  it("lists every command in the help text", () => {
    for (const command of Object.values(COMMANDS)) expect(usage()).toContain(`ci-admin ${command.usage}`);
  });
});
