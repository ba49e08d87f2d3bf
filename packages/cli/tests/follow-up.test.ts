/** The command lines dsh-shadow prints for the user to copy: they name this invocation's home and store. */
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { resolveStorePath } from 'dsh-shadow-context'
import { commandLine, sameStoreFlags, shellWord } from '../src/follow-up.ts'

describe('follow-up command lines', () => {
  it('name a home and a store that are not the defaults, and nothing when they are', () => {
    const saved = process.env['DSH_HOME']
    const home = resolve('/tmp/dsh-shadow-follow-up/home')
    process.env['DSH_HOME'] = home
    try {
      expect(sameStoreFlags({ home, storePath: resolveStorePath(undefined, home) }, '--home')).toEqual([])
      const other = '/tmp/dsh-shadow-follow-up/other'
      expect(sameStoreFlags({ home: other, storePath: resolveStorePath(undefined, other) }, '--dsh-home')).toEqual(['--dsh-home', other])
      expect(sameStoreFlags({ home, storePath: join(home, 'team.db') }, '--home')).toEqual(['--store', join(home, 'team.db')])
      // a password is never printed
      const flags = sameStoreFlags({ home, storePath: 'postgres://me:hunter2@db.internal/shadow' }, '--home')
      expect(flags[0]).toBe('--store')
      expect(flags.join(' ')).not.toContain('hunter2')
    } finally {
      if (saved === undefined) delete process.env['DSH_HOME']
      else process.env['DSH_HOME'] = saved
    }
  })

  it('quote a word the shell would split or expand, and only such a word', () => {
    expect(shellWord('/home/me/.dsh/shadow.db')).toBe('/home/me/.dsh/shadow.db')
    expect(shellWord('/home/me/my store.db')).toBe("'/home/me/my store.db'")
    expect(shellWord("it's $HOME")).toBe("'it'\\''s $HOME'")
    expect(commandLine(['--store', 'a b.db', 'forget', 'k7q2mz'])).toBe("dsh-shadow --store 'a b.db' forget k7q2mz")
  })
})
