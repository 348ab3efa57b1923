// A real SMTP server (the smtp-server package) run as its own process for the email tests: it listens on
// 127.0.0.1 at the port given (argv[2]), takes every message without authentication, and prints each as one JSON
// line on stdout: {from, to, data}, data being the raw message.
import { SMTPServer } from "smtp-server";

const port = Number(process.argv[2]);
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS"],
  logger: false,
  onData(stream, session, callback) {
    const chunks = [];
    stream.on("data", (c) => chunks.push(c));
    stream.on("end", () => {
      const line = JSON.stringify({
        from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
        to: session.envelope.rcptTo.map((r) => r.address),
        data: Buffer.concat(chunks).toString("utf8"),
      });
      process.stdout.write(`${line}\n`);
      callback();
    });
  },
});
server.listen(port, "127.0.0.1", () => process.stdout.write(`${JSON.stringify({ listening: port })}\n`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
