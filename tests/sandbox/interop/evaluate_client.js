// A SandboxService client in JavaScript, built from protos/ alone (no Python stubs):
// node evaluate_client.js HOST:PORT TASK.py CANDIDATE.py -> prints the response as JSON.
const fs = require("fs");
const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const [address, taskPath, candidatePath] = process.argv.slice(2);
const protoRoot = path.join(__dirname, "..", "..", "..", "protos");
const definition = protoLoader.loadSync("drkernel/v1/sandbox.proto", {
  includeDirs: [protoRoot],
  keepCase: true,
  enums: String,
  longs: String,
  defaults: true,
});
const { SandboxService } = grpc.loadPackageDefinition(definition).drkernel.v1;
const client = new SandboxService(address, grpc.credentials.createInsecure());
const request = {
  request_id: "from-node",
  reference_source: fs.readFileSync(taskPath, "utf8"),
  candidate_source: fs.readFileSync(candidatePath, "utf8"),
  options: { skip_timing: true },
};
client.Evaluate(request, { deadline: Date.now() + 300000 }, (error, response) => {
  if (error) {
    console.error(`${error.code} ${error.details}`);
    process.exit(1);
  }
  console.log(JSON.stringify({ request_id: response.request_id, verdict: response.verdict, checks: response.checks.length }));
});
