// Validates Kubernetes manifests against the API's own OpenAPI schemas
// (npm kubernetes-models, which validates with ajv).
//   node validate.mjs FILE.yaml...   exit 1 when any document is invalid
import fs from "fs";
import yaml from "js-yaml";
let bad = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of yaml.loadAll(fs.readFileSync(file, "utf8"))) {
    if (!doc) continue;
    const name = `${file}: ${doc.kind} ${doc.metadata && doc.metadata.name}`;
    const mod = `kubernetes-models/${doc.apiVersion}/${doc.kind}`; // "v1/Service", "apps/v1/..."
    let Model;
    try { Model = (await import(mod))[doc.kind]; } catch (e) { Model = undefined; }
    if (!Model) { console.log(`${name}: no schema for ${doc.apiVersion} ${doc.kind}`); bad++; continue; }
    try { new Model(doc).validate(); console.log(`${name}: valid`); }
    catch (e) { console.log(`${name}: ${e.message}`); bad++; }
  }
}
process.exit(bad ? 1 : 0);
