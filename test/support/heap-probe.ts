// Loaded into a `gavel serve` child (--import, with --expose-gc): on SIGUSR2 it collects garbage
// and prints the heap in use, so a test can read what the server keeps after the requests it sent.
process.on('SIGUSR2', () => {
  (globalThis as { gc?: () => void }).gc!();
  process.stdout.write(`heap-probe ${process.memoryUsage().heapUsed}\n`);
});
