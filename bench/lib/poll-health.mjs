// GET <url> every 50 ms until stdin closes, then the latencies (ms) as JSON on
// stdout. A process of its own, as a load balancer's check is: the harness that
// sends a burst is itself busy, and its own delays would count as the server's.
const url = process.argv[2];
const latencies = [];
let polling = true;
process.stdin.on("end", () => {
  polling = false;
});
process.stdin.resume();
// One request first, untimed: a fresh process's first fetch loads and sets up
// its HTTP client (about 60 ms against an idle server whose next answers take
// 3 ms), which is this process's cost, not the server's.
await fetch(url).then((response) => response.arrayBuffer());
while (polling) {
  const at = performance.now();
  await fetch(url).then((response) => response.arrayBuffer());
  latencies.push(performance.now() - at);
  await new Promise((resolve) => setTimeout(resolve, 50));
}
process.stdout.write(JSON.stringify(latencies));
