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
while (polling) {
  const at = performance.now();
  await fetch(url).then((response) => response.arrayBuffer());
  latencies.push(performance.now() - at);
  await new Promise((resolve) => setTimeout(resolve, 50));
}
process.stdout.write(JSON.stringify(latencies));
