// Starts `reprise serve` on a free port for a test and stops it with SIGTERM, as a service
// manager would. REPRISE_CLI and REPRISE_MODEL name the program and the model.
import { spawn } from "node:child_process";

export async function startServer(extraArgs = []) {
  const cli = process.env.REPRISE_CLI;
  const model = process.env.REPRISE_MODEL;
  if (!cli || !model) throw new Error("set REPRISE_CLI and REPRISE_MODEL");
  const child = spawn(cli, ["serve", "-m", model, "--port", "0", "-t", "2", "--alias", "stories",
                            "--sessions", "2", ...extraArgs],
                      { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the server did not start:\n" + log)), 60000);
    child.stderr.on("data", (data) => {
      log += data.toString();
      const match = log.match(/at (http:\/\/127\.0\.0\.1:\d+)\//);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`the server exited (${code}):\n` + log)));
  });
  child.stderr.on("data", (data) => { log += data.toString(); });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return {
    url,
    log: () => log,
    // SIGTERM; resolves with the exit code and signal once the server has drained.
    async stop() {
      child.kill("SIGTERM");
      return exited;
    },
  };
}
