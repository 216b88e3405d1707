// An MCP server's OAuth sign-in, the editor's side: which URLs the sidecar may have opened outside the editor (the
// attack of CVE-2025-6514 first), and where its secrets are kept in SecretStorage.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canSignOut } from '../src/common/mcp';
import { refusedExternal, SIDECAR_SECRETS, sidecarSecretKey } from '../src/common/signIn';

describe('opening an authorization page for the sidecar', () => {
  it('refuses what carries shell syntax, another scheme, plain http elsewhere or user info', () => {
    for (const uri of [
      'https://auth.example/authorize$(touch /tmp/pwned)', 'https://auth.example/a;b', 'https://auth.example/`id`',
      'https://auth.example/x|sh', 'file:///etc/passwd', 'javascript:alert(1)', 'a:$(calc.exe)', 'vscode://settings',
      'http://auth.example/authorize', 'https://good.example@evil.example/', 'https://auth.example/a\nb',
      'https://auth.exämple/authorize', 'https://auth.example/?next=<script>',
    ]) {
      assert.notEqual(refusedExternal(uri), undefined, uri);
    }
    assert.match(refusedExternal('https://x.example/$(id)')!, /a shell would read/);
    assert.match(refusedExternal('file:///etc/passwd')!, /scheme is file:/);
  });

  it('lets an ordinary authorization URL through, and plain http to this machine', () => {
    for (const uri of [
      'https://auth.example/authorize?response_type=code&client_id=a&redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcallback&state=x',
      'http://127.0.0.1:8080/authorize?state=x', 'http://localhost/authorize', 'http://[::1]:9/authorize',
    ]) {
      assert.equal(refusedExternal(uri), undefined, uri);
    }
  });
});

describe("the sidecar's secrets", () => {
  it('live under a prefix of their own, so no key it names is an API key', () => {
    assert.equal(sidecarSecretKey({ action: 'get', key: 'mcp-oauth:docs https://x/mcp:tokens' }),
      'sunwell.secret.mcp-oauth:docs https://x/mcp:tokens');
    assert.ok(sidecarSecretKey({ action: 'get', key: 'apiKey.openai' })!.startsWith(SIDECAR_SECRETS));
    assert.equal(sidecarSecretKey({ action: 'get', key: '' }), undefined);
    assert.equal(sidecarSecretKey({ action: 'get', key: 'k'.repeat(2001) }), undefined);
  });

  it('Sign Out is offered for a url server only', () => {
    assert.ok(canSignOut({ name: 'docs', state: 'running', transport: 'http', tools: [] }));
    assert.ok(!canSignOut({ name: 'box', state: 'running', transport: 'stdio', tools: [] }));
  });
});
