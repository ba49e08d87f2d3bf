/**
 * Vitest setup for the whole suite: every request any scripted model received during a test was
 * checked against DeepSeek's request contract (request-validator.ts). A test whose requests DeepSeek
 * would have refused fails here, whatever it asserted itself; the count of checked requests goes
 * into the test's meta for the suite total the reporter prints.
 */
import { afterEach, beforeEach } from 'vitest'
import { requestValidation } from '../src/request-validator.ts'

declare module 'vitest' {
  interface TaskMeta {
    /** Requests the DeepSeek request validator checked during this test. */
    validatedRequests?: number
  }
}

let before = 0

beforeEach(() => {
  before = requestValidation.validated
  requestValidation.refused.length = 0
})

afterEach(context => {
  context.task.meta.validatedRequests = requestValidation.validated - before
  const refused = requestValidation.refused.splice(0)
  if (refused.length > 0) {
    const first = refused[0]!
    throw new Error(`DeepSeek would have refused ${refused.length} request(s) of this test with HTTP 400; first (${first.purpose}): ${first.problems.join('; ')}`)
  }
})
