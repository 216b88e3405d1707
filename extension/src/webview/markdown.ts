// Model output is untrusted: markdown-it renders it with raw HTML disabled, then DOMPurify sanitizes the result
// before it becomes DOM (a second line of defence, e.g. against `javascript:` links or anything markdown-it lets
// through). Code blocks get a header with their language and a copy button.
import createDOMPurify from 'dompurify';
import MarkdownIt from 'markdown-it';

export type RenderMarkdown = (source: string) => string;

export function createMarkdownRenderer(win: Window & typeof globalThis): RenderMarkdown {
  const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });
  // Fences carry their language for the header; highlighting is left to the theme's monospace colours.
  md.renderer.rules.fence = (tokens, idx) => {
    const token = tokens[idx];
    const lang = token.info.trim().split(/\s+/)[0] ?? '';
    const escaped = md.utils.escapeHtml(token.content);
    const label = md.utils.escapeHtml(lang);
    return `<div class="code-block" data-testid="code-block"><div class="code-header"><span class="code-lang">${label}</span>` +
      `<button class="code-copy icon-button" data-action="copyCode" title="Copy" aria-label="Copy code" data-testid="copy-code">` +
      `<span class="codicon codicon-copy"></span></button></div>` +
      `<pre><code class="${lang ? `language-${label}` : ''}">${escaped}</code></pre></div>`;
  };
  const purify = createDOMPurify(win);
  return (source: string) =>
    purify.sanitize(md.render(source), {
      USE_PROFILES: { html: true },
      ADD_ATTR: ['data-action', 'data-testid'],
      // Images too: a remote image URL in an answer could carry workspace content to a third party (the CSP blocks
      // them as well; dropping them avoids broken-image boxes).
      FORBID_TAGS: ['style', 'form', 'input', 'textarea', 'select', 'iframe', 'object', 'embed', 'img'],
      FORBID_ATTR: ['style'],
    });
}
