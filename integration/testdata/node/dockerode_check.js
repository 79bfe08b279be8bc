'use strict';
// dockerode against a hutch daemon, as Node programs use it (VS Code's
// Docker extension, testcontainers-node and scripts).
//
// Usage: node dockerode_check.js SOCKET IMAGE
// IMAGE is a busybox on a loopback registry, not yet pulled. Prints
// "ok <name>" per check and PASS at the end; exits 1 on the first failure
// with what went wrong.
const Docker = require('dockerode');
const { PassThrough, Readable } = require('stream');
const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');

const [socketPath, image] = process.argv.slice(2);
const docker = new Docker({ socketPath });
let step = 'start';

// tar builds an uncompressed tar of {name: content} (string or Buffer).
function tar(files) {
  const blocks = [];
  for (const [name, content] of Object.entries(files)) {
    const data = Buffer.from(content);
    const h = Buffer.alloc(512);
    h.write(name, 0);
    h.write('0000644\0', 100);
    h.write('0000000\0', 108);
    h.write('0000000\0', 116);
    h.write(data.length.toString(8).padStart(11, '0') + '\0', 124);
    h.write(Math.floor(Date.now() / 1000).toString(8).padStart(11, '0') + '\0', 136);
    h.write('        ', 148);
    h.write('0', 156);
    h.write('ustar\0', 257);
    h.write('00', 263);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
    blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

// demux splits a multiplexed stream into its stdout and stderr texts.
function demux(stream) {
  const out = new PassThrough();
  const err = new PassThrough();
  docker.modem.demuxStream(stream, out, err);
  const o = collect(out);
  const e = collect(err);
  return new Promise((resolve, reject) => {
    stream.on('end', async () => {
      out.end();
      err.end();
      resolve({ stdout: (await o).toString(), stderr: (await e).toString() });
    });
    stream.on('error', reject);
  });
}

function follow(stream, onProgress) {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(stream, (err, out) => (err ? reject(err) : resolve(out)), onProgress);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function retry(f, n = 50) {
  for (let i = 0; ; i++) {
    try {
      return await f();
    } catch (e) {
      if (i >= n) throw e;
      await sleep(100);
    }
  }
}

async function run(cmd, opts = {}) {
  const c = await docker.createContainer({ Image: image, Cmd: cmd, ...opts });
  return c;
}

async function main() {
  step = 'ping/version/info';
  const pong = await docker.ping();
  check('ping', pong.toString() === 'OK', pong.toString());
  const ver = await docker.version();
  check('version', ver.ApiVersion && ver.Os === 'linux', ver);
  const info = await docker.info();
  check('info', typeof info.Containers === 'number' && info.OSType === 'linux', info);

  step = 'pull';
  const pullStream = await docker.pull(image);
  const seen = [];
  const out = await follow(pullStream, (ev) => seen.push(ev.status));
  check('pull progress', seen.some((s) => /^Pulling from /.test(s || '')) && seen.includes('Pull complete'), seen);
  check('pull status', out.some((e) => e.status === `Status: Downloaded newer image for ${image}`), out);

  step = 'listImages';
  let imgs = await docker.listImages({ filters: { reference: [image] } });
  check('listImages reference filter', imgs.length === 1 && imgs[0].RepoTags.includes(image), imgs);
  imgs = await docker.listImages({ filters: { reference: ['nothing/like:this'] } });
  check('listImages empty filter', imgs.length === 0, imgs);
  imgs = await docker.listImages({ all: true, digests: true });
  check('listImages all', imgs.some((i) => i.RepoTags.includes(image)), imgs);

  step = 'tag/remove';
  const img = docker.getImage(image);
  await img.tag({ repo: 'nodetest/tagged', tag: 'v1' });
  const ii = await docker.getImage('nodetest/tagged:v1').inspect();
  check('tag', ii.RepoTags.includes('nodetest/tagged:v1'), ii.RepoTags);
  const rm = await docker.getImage('nodetest/tagged:v1').remove();
  check('image remove', rm.some((r) => r.Untagged === 'nodetest/tagged:v1'), rm);
  try {
    await docker.getImage('nodetest/tagged:v1').inspect();
    check('image removed', false, 'still there');
  } catch (e) {
    check('image removed 404', e.statusCode === 404, e.message);
  }

  step = 'create with HostConfig';
  const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dockerode-'));
  fs.chmodSync(hostDir, 0o777);
  fs.writeFileSync(path.join(hostDir, 'in.txt'), 'from the host\n');
  const c1 = await run(['sh', '-c', 'echo "env=$GREETING"; cat /host/in.txt; echo written > /host/out.txt; echo to-stderr >&2; exit 7'], {
    name: 'dockerode-c1',
    Env: ['GREETING=hello'],
    Labels: { 'hutch.test': 'dockerode' },
    HostConfig: { Binds: [`${hostDir}:/host`] },
  });
  const c1i = await c1.inspect();
  check('create', c1i.Config.Labels['hutch.test'] === 'dockerode' && c1i.Name === '/dockerode-c1', c1i.Config);

  step = 'attach';
  const att = await c1.attach({ stream: true, stdout: true, stderr: true });
  const attOut = demux(att);
  await c1.start();
  const w = await c1.wait();
  check('wait', w.StatusCode === 7, w);
  const ao = await attOut;
  check('attach stdout', ao.stdout === 'env=hello\nfrom the host\n', ao);
  check('attach stderr', ao.stderr === 'to-stderr\n', ao);
  check('bind mount write', fs.readFileSync(path.join(hostDir, 'out.txt'), 'utf8') === 'written\n', fs.readdirSync(hostDir));

  step = 'listContainers';
  let list = await docker.listContainers({ all: true, filters: { label: ['hutch.test=dockerode'] } });
  check('listContainers label filter', list.length === 1 && list[0].Names[0] === '/dockerode-c1' && list[0].State === 'exited', list);
  list = await docker.listContainers({ all: true, filters: { status: ['exited'], name: ['dockerode-c1'] } });
  check('listContainers status+name filter', list.length === 1, list);
  list = await docker.listContainers({ filters: { label: ['hutch.test=dockerode'] } });
  check('listContainers running only', list.length === 0, list);

  step = 'logs';
  const logs = await c1.logs({ stdout: true, stderr: true, timestamps: true });
  // Without follow, dockerode returns a Buffer of the multiplexed stream.
  const logStream = new PassThrough();
  logStream.end(logs);
  const lo = await demux(logStream);
  check('logs timestamps', /^\d{4}-\d\d-\d\dT[\d:.]+Z env=hello\n/.test(lo.stdout) && /Z to-stderr\n$/.test(lo.stderr), lo);

  step = 'logs follow/since';
  const c2 = await run(['sh', '-c', 'echo one; sleep 2; echo two; sleep 0.3; echo three'], { name: 'dockerode-c2' });
  await c2.start();
  const fstream = await c2.logs({ follow: true, stdout: true, stderr: true });
  const fo = await demux(fstream);
  check('logs follow', fo.stdout === 'one\ntwo\nthree\n', fo);
  const since = Math.floor(Date.now() / 1000) - 1;
  const sinceLogs = await c2.logs({ stdout: true, since: since - 0 });
  const ss = new PassThrough();
  ss.end(sinceLogs);
  const so = await demux(ss);
  check('logs since', !so.stdout.includes('one') && so.stdout.includes('three'), so);
  const tail = await c2.logs({ stdout: true, tail: 1 });
  const ts = new PassThrough();
  ts.end(tail);
  check('logs tail', (await demux(ts)).stdout === 'three\n', tail.toString());

  step = 'attach stdin';
  // docker-modem sends the attach options as a JSON body, then stdin on
  // the same connection: the container reads only what is typed.
  const rd = await run(['sh', '-c', 'read x; echo "got $x"'], { OpenStdin: true, StdinOnce: true, AttachStdin: true, AttachStdout: true, AttachStderr: true });
  const as = await rd.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true });
  const asOut = demux(as);
  await rd.start();
  as.write('typed\n');
  check('attach stdin exit', (await rd.wait()).StatusCode === 0, null);
  as.end();
  check('attach stdin', (await asOut).stdout === 'got typed\n', await asOut);
  await rd.remove();
  const runOut = new PassThrough();
  const runText = collect(runOut);
  const [runRes, runC] = await docker.run(image, ['sh', '-c', 'echo ran; exit 2'], runOut, { Tty: false });
  runOut.end();
  check('docker.run', runRes.StatusCode === 2 && (await runText).toString().includes('ran\n'), [runRes, (await runText).toString()]);
  await runC.remove();

  step = 'ports';
  const web = await run(['sh', '-c', 'mkdir -p /www && echo served > /www/index.html && exec httpd -f -p 8080 -h /www'], {
    name: 'dockerode-web',
    ExposedPorts: { '8080/tcp': {} },
    HostConfig: { PortBindings: { '8080/tcp': [{ HostPort: '' }] } },
  });
  await web.start();
  const wi = await web.inspect();
  const hostPort = wi.NetworkSettings.Ports['8080/tcp'][0].HostPort;
  check('port binding', Number(hostPort) > 0, wi.NetworkSettings.Ports);
  const got = await retry(() => httpGet('127.0.0.1', Number(hostPort), '/index.html'));
  check('port reachable', got.status === 200 && got.body === 'served\n', got);
  list = await docker.listContainers({ filters: { name: ['dockerode-web'] } });
  check('listContainers ports', list[0].Ports.some((p) => p.PrivatePort === 8080 && String(p.PublicPort) === hostPort), list[0].Ports);

  step = 'exec';
  const ex = await web.exec({ Cmd: ['sh', '-c', 'echo out; echo err >&2; exit 5'], AttachStdout: true, AttachStderr: true });
  const exs = await ex.start({ hijack: true, stdin: false });
  const eo = await demux(exs);
  check('exec output', eo.stdout === 'out\n' && eo.stderr === 'err\n', eo);
  const ei = await ex.inspect();
  check('exec inspect', ei.ExitCode === 5 && ei.Running === false, ei);
  const ex2 = await web.exec({ Cmd: ['cat'], AttachStdin: true, AttachStdout: true, AttachStderr: true });
  const ex2s = await ex2.start({ hijack: true, stdin: true });
  const ex2o = demux(ex2s);
  ex2s.end('via stdin\n');
  check('exec stdin', (await ex2o).stdout === 'via stdin\n', await ex2o);

  step = 'archive';
  await web.putArchive(tar({ 'a.txt': 'put by dockerode\n', 'sub/b.txt': 'nested\n' }), { path: '/www' });
  const got2 = await retry(() => httpGet('127.0.0.1', Number(hostPort), '/a.txt'));
  check('putArchive', got2.body === 'put by dockerode\n', got2);
  const arc = await collect(await web.getArchive({ path: '/www' }));
  const files = untar(arc);
  check('getArchive', files['www/sub/b.txt'] && files['www/sub/b.txt'].toString() === 'nested\n' && files['www/index.html'].toString() === 'served\n', Object.keys(files));
  const head = await web.infoArchive({ path: '/www/a.txt' });
  head.resume();
  const stat = JSON.parse(Buffer.from(head.headers['x-docker-container-path-stat'], 'base64').toString());
  check('infoArchive', stat.name === 'a.txt' && stat.size === 17, stat);

  step = 'stats';
  const one = await web.stats({ stream: false });
  check('stats one-shot', one.memory_stats !== undefined && one.cpu_stats !== undefined && one.pids_stats !== undefined, one);
  const sstream = await web.stats({ stream: true });
  const frames = await new Promise((resolve, reject) => {
    const got = [];
    let buf = '';
    sstream.on('data', (d) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) got.push(JSON.parse(line));
        if (got.length === 2) {
          sstream.destroy();
          resolve(got);
        }
      }
    });
    sstream.on('error', reject);
    setTimeout(() => reject(new Error('no 2 stats frames in 5s')), 5000);
  });
  check('stats stream', frames.length === 2 && frames[1].read !== frames[0].read, frames.map((f) => f.read));

  step = 'stop/restart';
  await web.restart({ t: 0 });
  const ri = await web.inspect();
  check('restart', ri.State.Running && ri.RestartCount === 0, ri.State);
  await web.stop({ t: 0 });
  try {
    await web.stop({ t: 0 });
    check('stop twice 304', false, 'no error');
  } catch (e) {
    check('stop twice 304', e.statusCode === 304, e.statusCode);
  }

  step = 'build';
  const df = `FROM ${image}\nLABEL built=by-dockerode\nCOPY msg.txt /msg.txt\nRUN cat /msg.txt > /copied\nCMD ["cat", "/copied"]\n`;
  const bstream = await docker.buildImage(Readable.from([tar({ Dockerfile: df, 'msg.txt': 'context file\n' })]), { t: 'nodetest/built:1', rm: true });
  const bout = [];
  const bres = await follow(bstream, (ev) => bout.push(ev));
  check('build progress', bout.some((e) => e.stream && e.stream.includes('Step 1/5')), bout);
  check('build result', bres.some((e) => e.aux && e.aux.ID) && !bres.some((e) => e.error), bres);
  const bi = await docker.getImage('nodetest/built:1').inspect();
  check('built image', bi.Config.Labels.built === 'by-dockerode', bi.Config);
  const bc = await docker.createContainer({ Image: 'nodetest/built:1' });
  await bc.start();
  await bc.wait();
  const blog = new PassThrough();
  blog.end(await bc.logs({ stdout: true }));
  check('run built image', (await demux(blog)).stdout === 'context file\n', null);
  await bc.remove();
  const bfail = await docker.buildImage(Readable.from([tar({ Dockerfile: `FROM ${image}\nRUN exit 3\n` })]), { forcerm: true });
  // followProgress hands the error message over as an event: users look
  // for error/errorDetail in the output.
  const bfailOut = await follow(bfail);
  const bfailErr = bfailOut.find((e) => e.error);
  check('build failure', bfailErr && /returned a non-zero code: 3/.test(bfailErr.error) && bfailErr.errorDetail.code === 3, bfailOut);

  step = 'networks/volumes';
  const net = await docker.createNetwork({ Name: 'dockerode-net', Labels: { 'hutch.test': 'dockerode' } });
  const ni = await net.inspect();
  check('network inspect', ni.Name === 'dockerode-net' && ni.Driver === 'bridge' && ni.Labels['hutch.test'] === 'dockerode', ni);
  const nets = await docker.listNetworks({ filters: { label: ['hutch.test=dockerode'] } });
  check('listNetworks filter', nets.length === 1 && nets[0].Name === 'dockerode-net', nets);
  const vol = await docker.createVolume({ Name: 'dockerode-vol', Labels: { 'hutch.test': 'dockerode' } });
  const vi = await vol.inspect();
  check('volume inspect', vi.Name === 'dockerode-vol' && vi.Driver === 'local' && vi.Labels['hutch.test'] === 'dockerode', vi);
  const vols = await docker.listVolumes({ filters: { label: ['hutch.test=dockerode'] } });
  check('listVolumes filter', vols.Volumes.length === 1, vols);
  const srv = await run(['sh', '-c', 'echo vol-data > /data/f; mkdir /www; echo by-alias > /www/index.html; exec httpd -f -p 80 -h /www'], {
    name: 'dockerode-srv',
    HostConfig: { Binds: ['dockerode-vol:/data'], NetworkMode: 'dockerode-net' },
    NetworkingConfig: { EndpointsConfig: { 'dockerode-net': { Aliases: ['websrv'] } } },
  });
  await srv.start();
  const cli = await run(['sh', '-c', 'cat /data/f; for i in 1 2 3 4 5 6 7 8 9 10; do wget -qO- http://websrv/ && exit 0; sleep 0.2; done; exit 1'], {
    HostConfig: { Binds: ['dockerode-vol:/data:ro'], NetworkMode: 'dockerode-net' },
  });
  const cliOut = cli.attach({ stream: true, stdout: true, stderr: true }).then(demux);
  await cli.start();
  check('alias resolution exit', (await cli.wait()).StatusCode === 0, null);
  check('alias resolution output', (await cliOut).stdout === 'vol-data\nby-alias\n', await cliOut);
  await cli.remove();
  const net2 = await docker.createNetwork({ Name: 'dockerode-net2' });
  await net2.connect({ Container: 'dockerode-srv', EndpointConfig: { Aliases: ['other'] } });
  const si = await srv.inspect();
  check('network connect', si.NetworkSettings.Networks['dockerode-net2'] !== undefined, Object.keys(si.NetworkSettings.Networks));
  await net2.disconnect({ Container: 'dockerode-srv', Force: true });
  await net2.remove();
  await srv.remove({ force: true });
  await net.remove();
  await vol.remove();
  try {
    await vol.inspect();
    check('volume removed', false, 'still there');
  } catch (e) {
    check('volume removed', e.statusCode === 404, e.statusCode);
  }

  step = 'events';
  const since2 = Math.floor(Date.now() / 1000);
  const events = await docker.getEvents({ filters: { type: ['container'], label: ['hutch.test=events'] } });
  const evs = [];
  const gotEvents = new Promise((resolve) => {
    let buf = '';
    events.on('data', (d) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) evs.push(JSON.parse(line));
        if (evs.some((e) => e.Action === 'destroy')) resolve();
      }
    });
  });
  const ec = await run(['true'], { Labels: { 'hutch.test': 'events' } });
  await ec.start();
  await ec.wait();
  await ec.remove();
  await Promise.race([gotEvents, sleep(5000)]);
  events.destroy();
  check('events', ['create', 'start', 'die', 'destroy'].every((a) => evs.some((e) => e.Action === a && e.Actor.Attributes['hutch.test'] === 'events')), evs.map((e) => e.Action));
  const past = await docker.getEvents({ since: since2, until: Math.floor(Date.now() / 1000) + 1, filters: { event: ['die'], label: ['hutch.test=events'] } });
  const pastEvs = (await collect(past)).toString().trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  check('events since/until', pastEvs.length === 1 && pastEvs[0].Action === 'die', pastEvs);

  step = 'df';
  const du = await docker.df();
  check('df', Array.isArray(du.Images) && du.Images.some((i) => (i.RepoTags || []).includes(image)) && du.LayersSize > 0 && Array.isArray(du.Containers) && Array.isArray(du.Volumes), Object.keys(du));

  step = 'prune';
  const pr = await docker.pruneContainers({ filters: { label: ['hutch.test=dockerode'] } });
  check('pruneContainers', pr.ContainersDeleted && pr.ContainersDeleted.length === 1, pr);
  await web.remove({ v: true });
  await c2.remove();
  const left = await docker.listContainers({ all: true });
  check('all removed', left.length === 0, left);
  await docker.getImage('nodetest/built:1').remove();
  fs.rmSync(hostDir, { recursive: true, force: true });
}

main().then(
  () => console.log('PASS'),
  (e) => {
    console.error(`${step}: ${e.stack || e}`);
    if (e.json) console.error(JSON.stringify(e.json));
    process.exit(1);
  },
);
