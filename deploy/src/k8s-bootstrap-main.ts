// The entry point of the Helm chart's bootstrap Job (the admin image): see runK8sBootstrap.
import { runK8sBootstrap } from "./k8s/k8s-bootstrap.js";

const log = (line: string) => process.stdout.write(`${line}\n`);
try {
  await runK8sBootstrap(process.env, log);
} catch (err) {
  process.stderr.write(`bootstrap failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
