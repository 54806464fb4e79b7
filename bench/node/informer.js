// bench/node/informer.js - the JavaScript peer of bench/core.sh: the official
// client-node informer (makeInformer) listing and watching Pods with a label
// selector from the same kubesim rayop's watcher syncs from. Prints one line
//   synced ms=<since process start> adds=<n> cached=<n> rss_max=<bytes> vmhwm_kb=<kB>
// once the informer has connected and delivered N 'add' events, then exits 0;
// exits 1 on an informer error or after --timeout-ms.
//
//   node informer.js KUBECONFIG N LABEL_SELECTOR [TIMEOUT_MS]
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import * as k8s from '@kubernetes/client-node';

const [kcPath, nStr, selector, tmoStr] = process.argv.slice(2);
const want = Number(nStr);
if (!kcPath || !Number.isInteger(want) || want < 1 || !selector) {
  console.error('usage: node informer.js KUBECONFIG N LABEL_SELECTOR [TIMEOUT_MS]');
  process.exit(2);
}
const timeoutMs = Number(tmoStr || 120000);

let rssMax = 0;
const sample = () => { rssMax = Math.max(rssMax, process.memoryUsage().rss); };
// the 'add' callbacks run in bursts after each list page: sample between them too
const sampler = setInterval(sample, 20);

function vmhwmKb() {
  const m = /VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : -1;
}

const kc = new k8s.KubeConfig();
kc.loadFromFile(kcPath);
const core = kc.makeApiClient(k8s.CoreV1Api);
const informer = k8s.makeInformer(kc, '/api/v1/pods',
  () => core.listPodForAllNamespaces({ labelSelector: selector }), selector);

let adds = 0;
let connected = false;
let done = false;
function finish() {
  if (done || !connected || adds < want) return;
  done = true;
  const ms = performance.now();
  sample();
  console.log(`synced ms=${ms.toFixed(1)} adds=${adds} cached=${informer.list().length} ` +
              `rss_max=${rssMax} vmhwm_kb=${vmhwmKb()}`);
  clearInterval(sampler);
  informer.stop().finally(() => process.exit(0));
}
informer.on('add', () => { adds++; if (adds % 1000 === 0) sample(); finish(); });
informer.on('connect', () => { connected = true; finish(); });
informer.on('error', (err) => {
  console.error('informer error:', err && err.message ? err.message : err);
  process.exit(1);
});
setTimeout(() => {
  console.error(`timeout after ${timeoutMs} ms: connected=${connected} adds=${adds}`);
  process.exit(1);
}, timeoutMs).unref();
informer.start().catch((err) => {
  console.error('informer start:', err && err.message ? err.message : err);
  process.exit(1);
});
