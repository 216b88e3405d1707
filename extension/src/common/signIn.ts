// An MCP server's OAuth sign-in, the editor's side: pure, so it is tested without VS Code. The sidecar checks the
// authorization URL before it asks the editor to open it (server/sunwell/tools/mcp/sign_in_url.py); the editor checks
// again what any `window/showDocument` with `external: true` would hand to the system (mcp-remote's CVE-2025-6514
// was such a URL reaching a shell). And the sidecar's secrets live under a prefix of their own in SecretStorage, so
// no key it names reaches the API keys kept there.
import type { SecretParams } from '../protocol';

export const SIDECAR_SECRETS = 'sunwell.secret.';

/** The SecretStorage key of one of the sidecar's secrets; undefined for a key it may not name. */
export function sidecarSecretKey(params: SecretParams): string | undefined {
  const { key } = params;
  return typeof key === 'string' && key.length > 0 && key.length <= 2000 ? SIDECAR_SECRETS + key : undefined;
}

const SHELL_CHARACTERS = new Set('`$;|<>\\"\'{}^');

/** Why `uri` may not be opened outside the editor, or undefined when it may: http(s) only, plain http only to this
 *  machine, no user info, printable ASCII without the characters a shell reads. */
export function refusedExternal(uri: string): string | undefined {
  for (const char of uri) {
    const code = char.codePointAt(0) ?? 0;
    if (code <= 0x20 || code >= 0x7f) return `it carries ${code > 0x7f ? 'a character outside ASCII' : 'whitespace or a control character'}`;
    if (SHELL_CHARACTERS.has(char)) return `it carries ${JSON.stringify(char)}, which a shell would read`;
  }
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'it is not a URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `its scheme is ${url.protocol}, not http or https`;
  if (url.username || url.password) return 'it carries user info';
  if (url.protocol === 'http:' && !isLoopback(url.hostname)) return `it is plain http to ${url.hostname}`;
  return undefined;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
