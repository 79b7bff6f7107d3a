// A Table to a Worker without copying: the main thread exports a stream,
// posts its address (a number), and the Worker reads it in place. Run:
// bun examples/worker_table.ts
import { tableFromArrays } from "apache-arrow";
import { exportStream, importTable } from "bun-arrow-device";

declare const self: Worker;

if (Bun.isMainThread) {
  // The main thread's memory lives as long as the process, so any Worker
  // may view it in place (a Worker's exports are refused on other threads).
  const table = tableFromArrays({ id: Int32Array.from({ length: 1_000_000 }, (_, i) => i) });
  const out = exportStream(table);
  const worker = new Worker(import.meta.url);
  worker.onmessage = (event) => {
    console.log(JSON.stringify(event.data)); // {"rows":1000000,"sum":499999500000}
    out.release(); // the Worker moved the stream out; its batches hold the buffers until collected
    worker.terminate();
  };
  worker.postMessage(out.stream); // the struct's address, a number
} else {
  self.onmessage = (event) => {
    // get_next runs the main thread's source there (through its event loop).
    const table = importTable(event.data);
    let sum = 0;
    for (const id of table.getChild("id")!.toArray() as Int32Array) sum += id;
    self.postMessage({ rows: table.numRows, sum });
  };
}
