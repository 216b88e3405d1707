// An MCP server's OAuth sign-in, answered by the editor: the sidecar's `window/showDocument` (external) opens the
// authorization page with `env.openExternal` (vscode-languageclient's own handler, after the check of
// common/signIn.ts), and `sunwell/secret` keeps the sign-in (tokens, registration) in SecretStorage.
import * as vscode from 'vscode';
import {
  CancellationToken, type ShowDocumentParams, type ShowDocumentRequest, type ShowDocumentResult,
} from 'vscode-languageclient/node';
import { refusedExternal, sidecarSecretKey } from './common/signIn';
import type { SecretParams, SecretResult } from './protocol';

export async function answerSecret(storage: vscode.SecretStorage, params: SecretParams): Promise<SecretResult> {
  const key = sidecarSecretKey(params);
  if (key === undefined) throw new Error('sunwell/secret: a key of 1 to 2000 characters');
  switch (params.action) {
    case 'get':
      return { value: (await storage.get(key)) ?? null };
    case 'store':
      await storage.store(key, params.value ?? '');
      return { value: null };
    case 'delete':
      await storage.delete(key);
      return { value: null };
    default:
      throw new Error(`sunwell/secret: unknown action ${String(params.action)}`);
  }
}

/** The LanguageClient's `window.showDocument` middleware: an external URL the check refuses is never opened. */
export function checkedShowDocument(log: vscode.LogOutputChannel) {
  return async (params: ShowDocumentParams, next: ShowDocumentRequest.HandlerSignature): Promise<ShowDocumentResult> => {
    const refused = params.external ? refusedExternal(params.uri) : undefined;
    // The library's own handler, which ignores the token (the middleware is given none).
    if (refused === undefined) return (await next(params, CancellationToken.None)) as ShowDocumentResult;
    log.warn(`not opening ${JSON.stringify(params.uri)} for the sidecar: ${refused}`);
    return { success: false };
  };
}
