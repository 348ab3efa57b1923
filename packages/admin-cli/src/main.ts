import { AgentsService } from "@conveyor/proto/agents";
import { IdentityService } from "@conveyor/proto/identity";
import { createEnvReader, createServiceClient, defaultServiceUrl } from "@conveyor/runtime";
import { parseArgs } from "./args.js";
import { COMMANDS, type CommandContext, usage } from "./commands.js";
import { describeError } from "./describe-error.js";

const env = createEnvReader(process.env);
const identityUrl = env.url("IDENTITY_URL", defaultServiceUrl("identity"));
const agentsUrl = env.url("AGENTS_URL", defaultServiceUrl("agents"));
const ctx: CommandContext = {
  identity: () => createServiceClient(IdentityService, identityUrl, { protocol: "grpc", timeoutMs: 15_000 }),
  agents: () => createServiceClient(AgentsService, agentsUrl, { protocol: "grpc", timeoutMs: 15_000 }),
};

const args = parseArgs(process.argv.slice(2));
const key = args.words.slice(0, 2).join(" ");
const command = COMMANDS[key];
if (args.words.length === 0 || args.flags.help === true) {
  process.stdout.write(`${usage()}\n`);
  process.exit(args.words.length === 0 && args.flags.help !== true ? 2 : 0);
}
if (!command) {
  process.stderr.write(`ci-admin: unknown command "${args.words.join(" ")}"\n\n${usage()}\n`);
  process.exit(2);
}
try {
  const result = await command.run(args, ctx);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (err) {
  const { message, code } = describeError(err, { identityUrl, agentsUrl, usage: command.usage });
  process.stderr.write(`ci-admin: ${message}\n`);
  process.exit(code);
}
