import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { getFreePort } from "@conveyor/deploy";
import { startNotificationsProcess } from "../support/notifications-process.js";
import { send, stack, unique } from "../support/stack-env.js";
import { eventually } from "../support/webhook-receiver.js";

// notify: email through a real SMTP server (the smtp-server package, run as its own process by
// test/support/smtp-sink.mjs) and a notifications process of this suite's own whose SMTP_URL points at it (the
// stack's has none): a finished build's email reaches its recipient with the build in the subject and its link in
// the plain-text and HTML bodies, and an email whose if: does not hold is not sent (docs/notifications.md#notify).
interface Mail {
  from: string;
  to: string[];
  data: string;
}
const mails: Mail[] = [];
let sink: ChildProcess;
let notifications: Awaited<ReturnType<typeof startNotificationsProcess>>;

/** The message with its lines ended by \n, folded headers unfolded and quoted-printable undone. */
const decoded = (data: string) =>
  data
    .replace(/\r\n/g, "\n")
    .replace(/\n[ \t]+/g, " ")
    .replace(/=\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

beforeAll(async () => {
  const port = await getFreePort();
  sink = spawn(process.execPath, [join(__dirname, "..", "support", "smtp-sink.mjs"), String(port)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let buffered = "";
  let listening = false;
  sink.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
      const line = JSON.parse(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
      if (line.listening) listening = true;
      else mails.push(line);
    }
  });
  await eventually("the SMTP server", () => listening);
  notifications = await startNotificationsProcess({
    SMTP_URL: `smtp://127.0.0.1:${port}`,
    SMTP_FROM: "CI <ci@conveyor.test>",
    // Nothing of this suite posts anywhere; the stack's other suites' receivers stay the stack's.
    OUTBOUND_ALLOW_HOSTS: "127.0.0.2",
  });
}, 90_000);

afterAll(async () => {
  await notifications?.remove();
  sink?.kill("SIGTERM");
});

it("mails a finished build to its recipient with the build's link, and not when if: does not hold", async () => {
  const base = `/v2/organizations/${stack.orgSlug}`;
  const to = `${unique("dev")}@example.com`;
  const never = `${unique("never")}@example.com`;
  const pipeline = await send("POST", `${base}/pipelines`, stack.apiToken, {
    name: unique("Mailed"),
    repository: "/tmp/nothing",
    cluster_id: stack.clusterId,
    configuration: [
      "notify:",
      `  - email: ${to}`,
      `  - email: ${never}`,
      '    if: build.state == "passed"',
      "steps:",
      "  - command: make",
    ].join("\n"),
  });
  expect(pipeline.status).toBe(201);
  const build = await send("POST", `${base}/pipelines/${pipeline.body.slug}/builds`, stack.apiToken, {
    commit: "HEAD",
    branch: "feature/mail",
    message: "Mail me <please>",
  });
  expect(build.status).toBe(201);
  await send("PUT", `${base}/pipelines/${pipeline.body.slug}/builds/${build.body.number}/cancel`, stack.apiToken);
  await eventually("the email", () => mails.some((m) => m.to.includes(to)), 30_000);
  const mail = mails.find((m) => m.to.includes(to)) as Mail;
  expect(mail.to).toEqual([to]);
  expect(mail.from).toBe("ci@conveyor.test");
  const data = decoded(mail.data);
  expect(data).toContain(
    `Subject: [${pipeline.body.name}] Build #${build.body.number} of ${pipeline.body.name} was canceled (feature/mail)`,
  );
  expect(data).toContain("Content-Type: text/plain");
  expect(data).toContain("Content-Type: text/html");
  expect(data).toContain(`\n${build.body.web_url}\n`);
  expect(data).toContain(`<a href="${build.body.web_url}">`);
  expect(data).toContain("Mail me &lt;please&gt;");
  expect(data).toContain("X-Buildkite-Event: build.finished");
  await new Promise((r) => setTimeout(r, 1_000));
  expect(mails.filter((m) => m.to.includes(never))).toEqual([]);
  expect(mails.filter((m) => m.to.includes(to))).toHaveLength(1);
});
