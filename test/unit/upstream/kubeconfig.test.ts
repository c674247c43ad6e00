import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadKubeConfig } from '../../../src/upstream/kubeconfig.ts';
import { createUpstream } from '../../../src/upstream/upstream.ts';

describe('loadKubeConfig / createUpstream', () => {
  it('finds a relative token-file, resolves it against the kubeconfig and re-reads it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kcp-kc-'));
    try {
      writeFileSync(path.join(dir, 'tok'), 'abc');
      const file = path.join(dir, 'config');
      writeFileSync(
        file,
        `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443/prefix/
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token-file: tok
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`,
      );
      const loaded = loadKubeConfig({ kubeconfig: file });
      assert.equal(loaded.tokenFile, path.join(dir, 'tok'));
      const up = await createUpstream({ loaded });
      assert.equal(up.baseUrl, 'https://127.0.0.1:6443/prefix');
      assert.equal(await up.authorization(), 'Bearer abc');
      await up.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('client-certificate users send no Authorization header', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kcp-kc-'));
    try {
      const file = path.join(dir, 'config');
      writeFileSync(
        file,
        `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: 'https://127.0.0.1:6443', certificate-authority-data: ${Buffer.from('not-a-real-ca').toString('base64')}}
users:
- name: u
  user: {client-certificate-data: ${Buffer.from('cert').toString('base64')}, client-key-data: ${Buffer.from('key').toString('base64')}}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`,
      );
      const up = await createUpstream({ kubeconfig: file });
      assert.equal(await up.authorization(), undefined);
      await up.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
