// A SandboxService client in JavaScript, built from protos/ alone (no Python stubs):
// node evaluate_client.js HOST:PORT TASK.py CANDIDATE.py -> prints the response as JSON.
// Security comes from the environment variables the Python services read for it:
// DRKERNEL_SECURITY__TLS_CA_FILE (TLS, servers verified against this CA),
// DRKERNEL_SECURITY__CLIENT_CERT_FILE and DRKERNEL_SECURITY__CLIENT_KEY_FILE (mutual TLS),
// DRKERNEL_SECURITY__TOKEN_FILE (the bearer token, sent on every call; needs TLS) and
// DRKERNEL_SECURITY__TLS_SERVER_NAME (the name checked in the server's certificate).
const fs = require("fs");
const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

function setting(name) {
  return process.env[`DRKERNEL_SECURITY__${name}`];
}

function read(name) {
  return setting(name) ? fs.readFileSync(setting(name)) : null;
}

// Channel credentials and options: plaintext unless a CA is given; the token only over TLS.
function security() {
  if (!setting("TLS_CA_FILE")) {
    if (setting("TOKEN_FILE")) {
      throw new Error("DRKERNEL_SECURITY__TOKEN_FILE needs DRKERNEL_SECURITY__TLS_CA_FILE: the token never crosses plaintext");
    }
    return [grpc.credentials.createInsecure(), {}];
  }
  let credentials = grpc.credentials.createSsl(read("TLS_CA_FILE"), read("CLIENT_KEY_FILE"), read("CLIENT_CERT_FILE"));
  if (setting("TOKEN_FILE")) {
    const token = fs.readFileSync(setting("TOKEN_FILE"), "utf8").trim();
    const bearer = grpc.credentials.createFromMetadataGenerator((_params, callback) => {
      const metadata = new grpc.Metadata();
      metadata.add("authorization", `Bearer ${token}`);
      callback(null, metadata);
    });
    credentials = grpc.credentials.combineChannelCredentials(credentials, bearer);
  }
  const name = setting("TLS_SERVER_NAME");
  return [credentials, name ? { "grpc.ssl_target_name_override": name, "grpc.default_authority": name } : {}];
}

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
const [credentials, options] = security();
const client = new SandboxService(address, credentials, options);
const request = {
  request_id: "from-node",
  reference_source: fs.readFileSync(taskPath, "utf8"),
  candidate_source: fs.readFileSync(candidatePath, "utf8"),
  options: { skip_timing: true },
};
client.Evaluate(request, { deadline: Date.now() + 300000 }, (error, response) => {
  if (error) {
    console.error(`${grpc.status[error.code]}: ${error.details}`);
    process.exit(1);
  }
  console.log(JSON.stringify({ request_id: response.request_id, verdict: response.verdict, checks: response.checks.length }));
});
