/** Prints, after the run, how many requests the DeepSeek request validator checked across the suite. */
import type { Reporter, TestModule } from 'vitest/node'

export default class RequestValidationReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let validated = 0
    let tests = 0
    let withRequests = 0
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        tests += 1
        const count = test.meta().validatedRequests ?? 0
        validated += count
        if (count > 0) withRequests += 1
      }
    }
    process.stdout.write(`\nrequest validator: ${validated} model requests checked against DeepSeek's request contract, in ${withRequests} of ${tests} tests (in-process scripted models; child processes validate but are not counted)\n`)
  }
}
