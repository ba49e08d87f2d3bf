/**
 * The plugin's stylesheet, added once when the module materializes (the same way dsh's own client
 * plugins inject theirs). Colours come from the web app's theme variables, with fallbacks.
 */
export const STYLE_ID = 'dsh-shadow-context/client.css'

export const CSS = `
.dsc-node{margin:6px 0;border:1px solid var(--dsw-alias-border-l1,#d9d9de);border-radius:10px;font-size:13px;line-height:20px;color:var(--dsw-alias-label-primary,#1b1b1f);background:var(--dsw-alias-bg-base,transparent)}
.dsc-row{display:flex;gap:8px;align-items:baseline;width:100%;padding:6px 10px;border:0;background:none;text-align:left;font:inherit;color:inherit;cursor:pointer}
.dsc-row.dsc-static{cursor:default}
.dsc-glyph{flex:none;color:var(--dsw-alias-label-tertiary,#777)}
.dsc-title{flex:none}
.dsc-facts{min-width:0;color:var(--dsw-alias-label-secondary,#555);overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.dsc-muted{color:var(--dsw-alias-label-tertiary,#777);padding:4px 10px}
.dsc-line{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.dsc-error{color:var(--dsw-alias-state-error-primary,#c4302b);padding:4px 10px;white-space:pre-wrap}
.dsc-error.dsc-inline{padding:0 10px;font-size:12px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.dsc-transcript{border-top:1px solid var(--dsw-alias-border-l1,#e5e5ea);padding:4px 0}
.dsc-originals{list-style:none;margin:0;padding:0 10px;max-height:420px;overflow:auto}
.dsc-original{padding:6px 0;border-bottom:1px dashed var(--dsw-alias-border-l1,#e5e5ea)}
.dsc-meta{font-size:12px;color:var(--dsw-alias-label-tertiary,#777)}
.dsc-id{font-family:var(--dsw-font-family-mono,ui-monospace,monospace)}
.dsc-text{margin:2px 0 0;white-space:pre-wrap;overflow-wrap:anywhere;font:12px/18px var(--dsw-font-family-mono,ui-monospace,monospace)}
.dsc-expired{margin:2px 0 0;font-style:italic;opacity:.75}
.dsc-pager{display:flex;gap:10px;align-items:center;padding:4px 10px}
.dsc-pager button,.dsc-search-form button{font:inherit;font-size:12px;padding:2px 10px;border-radius:6px;border:1px solid var(--dsw-alias-border-l2,#c9c9cf);background:none;color:inherit;cursor:pointer}
.dsc-pager button:disabled{opacity:.4;cursor:default}
.dsc-chips{display:flex;flex-wrap:wrap;gap:6px;padding:0 10px 8px 30px}
.dsc-chip{font:12px/18px var(--dsw-font-family-mono,ui-monospace,monospace);padding:0 8px;border-radius:999px;border:1px solid var(--dsw-alias-border-l2,#c9c9cf);background:none;color:inherit;cursor:pointer}
.dsc-chip.dsc-on{background:var(--dsw-alias-interactive-bg-hover,#ececf1)}
.dsc-dock{box-sizing:border-box;width:calc(100% - 2 * var(--dsh-composer-side-clearance,0px));max-width:var(--dsh-composer-card-max-width,100%);margin:0 auto 6px;border:1px solid var(--dsw-alias-border-l1,#d9d9de);border-radius:12px;background:var(--dsw-specific-tip,transparent);font-size:13px;line-height:20px}
.dsc-bar{display:flex;align-items:center;min-width:0}
.dsc-body{border-top:1px solid var(--dsw-alias-border-l1,#e5e5ea);max-height:46vh;overflow:auto}
.dsc-search-form{display:flex;gap:8px;padding:8px 10px}
.dsc-search-form select{font:inherit;font-size:12px;border-radius:6px;border:1px solid var(--dsw-alias-border-l2,#c9c9cf);background:var(--dsw-alias-bg-base,#fff);color:inherit}
.dsc-search-form input{flex:1;min-width:0;font:inherit;padding:2px 8px;border-radius:6px;border:1px solid var(--dsw-alias-border-l2,#c9c9cf);background:var(--dsw-alias-bg-base,#fff);color:inherit}
.dsc-hits{list-style:none;margin:0;padding:0 10px}
.dsc-hit{display:block;width:100%;text-align:left;font:inherit;font-size:12px;border:0;background:none;color:inherit;cursor:pointer;padding:4px 0}
.dsc-snippet{display:block;color:var(--dsw-alias-label-secondary,#555);white-space:pre-wrap}
.dsc-snippet mark{background:var(--dsw-alias-state-warning-bg,#fff1b8);color:inherit;border-radius:2px}
.dsc-compaction{margin:2px 0;font-size:14px;line-height:24px;color:var(--dsw-alias-label-tertiary,#777)}
.dsc-compaction .dsc-row{padding:0 2px;border-radius:6px}
.dsc-compaction .dsc-row:disabled{cursor:default}
.dsc-compaction .dsc-title{color:var(--dsw-alias-label-primary-dimmed,#444)}
.dsc-summary{padding:4px 0 4px 22px}
.dsc-digest{padding:0 10px 6px}
.dsc-timeline{margin:0;padding:4px 10px 8px 28px;font-size:12px;color:var(--dsw-alias-label-secondary,#555)}
`

export function injectStyle(): void {
  if (typeof document === 'undefined' || document.querySelector(`style[data-plugin-css="${STYLE_ID}"]`) !== null) return
  const tag = document.createElement('style')
  tag.dataset['plugin'] = 'dsh-shadow-context'
  tag.dataset['pluginCss'] = STYLE_ID
  tag.textContent = CSS
  document.head.appendChild(tag)
}
