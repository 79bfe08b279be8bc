'use strict';
// testcontainers for Node against a hutch daemon found through DOCKER_HOST,
// Ryuk disabled (its image lives on Docker Hub).
//
// Usage: node testcontainers_check.js IMAGE
// IMAGE is a busybox on a loopback registry, pulled by testcontainers.
// Prints "ok <name>" per check and PASS at the end; exits 1 on the first
// failure with what went wrong.
const { GenericContainer, Network, Wait } = require('testcontainers');
const Docker = require('dockerode');
const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');

const [image] = process.argv.slice(2);
let step = 'start';

// readUntil reads a stream that does not end (testcontainers' logs follow
// and do not keep node alive) until done(text) or ms pass.
function readUntil(stream, done, ms = 5000) {
  return new Promise((resolve) => {
    let text = '';
    const timer = setTimeout(() => resolve(text), ms);
    stream.on('data', (d) => {
      text += d.toString();
      if (done(text)) {
        clearTimeout(timer);
        resolve(text);
      }
    });
    stream.on('end', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tc-'));
  const started = [];
  try {
    step = 'httpd';
    fs.writeFileSync(path.join(tmp, 'index.html'), 'copied file\n');
    const logLines = [];
    const web = await new GenericContainer(image)
      .withCommand(['sh', '-c', 'echo "starting $GREETING"; echo oops >&2; exec httpd -f -v -p 8080 -h /www'])
      .withEnvironment({ GREETING: 'hello' })
      .withLabels({ 'hutch.test': 'tc' })
      .withExposedPorts(8080)
      .withCopyFilesToContainer([{ source: path.join(tmp, 'index.html'), target: '/www/index.html' }])
      .withLogConsumer((s) => s.on('data', (l) => logLines.push(l.toString())))
      .withWaitStrategy(Wait.forAll([Wait.forLogMessage('starting hello'), Wait.forListeningPorts(), Wait.forHttp('/index.html', 8080).forStatusCode(200)]))
      .withStartupTimeout(30000)
      .start();
    started.push(web);
    const host = web.getHost();
    const port = web.getMappedPort(8080);
    let got = await httpGet(host, port, '/index.html');
    check('forHttp/copyFilesToContainer', got.status === 200 && got.body === 'copied file\n', got);
    check('labels', web.getLabels()['hutch.test'] === 'tc', web.getLabels());

    step = 'exec';
    let r = await web.exec(['sh', '-c', 'echo $GREETING; echo err >&2; exit 3']);
    check('exec', r.exitCode === 3 && r.stdout === 'hello\n' && r.stderr === 'err\n' && r.output.includes('hello') && r.output.includes('err'), r);
    r = await web.exec('pwd', { workingDir: '/www', env: { X: 'y' } });
    check('exec workingDir', r.exitCode === 0 && r.stdout === '/www\n', r);

    step = 'logs';
    const logs = await readUntil(await web.logs(), (t) => t.includes('starting hello') && t.includes('oops'));
    check('logs', logs.includes('starting hello') && logs.includes('oops'), logs);
    check('log consumer', logLines.join('').includes('starting hello') && logLines.join('').includes('oops'), logLines);

    step = 'copy';
    await web.copyContentToContainer([{ content: 'content copied\n', target: '/www/content.html', mode: 0o644 }]);
    got = await httpGet(host, port, '/content.html');
    check('copyContentToContainer', got.body === 'content copied\n', got);
    const arc = untar(await collect(await web.copyArchiveFromContainer('/www')));
    check('copyArchiveFromContainer', arc['www/content.html'] && arc['www/content.html'].toString() === 'content copied\n' && arc['www/index.html'].toString() === 'copied file\n', Object.keys(arc));

    step = 'restart';
    await web.restart({ timeout: 0 });
    const port2 = web.getMappedPort(8080);
    got = await httpGet(host, port2, '/content.html');
    check('restart', got.body === 'content copied\n', got);

    step = 'stop';
    const stopped = await web.stop({ timeout: 0, remove: false });
    const arc2 = untar(await collect(await stopped.copyArchiveFromContainer('/www/index.html')));
    check('copy from stopped', arc2['index.html'] && arc2['index.html'].toString() === 'copied file\n', Object.keys(arc2));
    started.pop();
    await new Docker().getContainer(stopped.getId()).remove(); // dockerode finds DOCKER_HOST too

    step = 'healthcheck';
    const healthy = await new GenericContainer(image)
      .withCommand(['sh', '-c', 'sleep 1; touch /ready; exec sleep 60'])
      .withHealthCheck({ test: ['CMD-SHELL', 'test -f /ready'], interval: 200, timeout: 1000, retries: 20, startPeriod: 0 })
      .withWaitStrategy(Wait.forHealthCheck())
      .withStartupTimeout(20000)
      .start();
    started.push(healthy);
    r = await healthy.exec(['test', '-f', '/ready']);
    check('forHealthCheck', r.exitCode === 0, r);

    step = 'network';
    const network = await new Network().start();
    const srv = await new GenericContainer(image)
      .withCommand(['sh', '-c', 'mkdir -p /www && echo by-alias > /www/index.html && exec httpd -f -p 80 -h /www'])
      .withNetwork(network)
      .withNetworkAliases('websrv')
      .withWaitStrategy(Wait.forSuccessfulCommand('wget -qO- http://127.0.0.1/'))
      .start();
    started.push(srv);
    const cli = await new GenericContainer(image).withCommand(['sleep', '60']).withNetwork(network).start();
    started.push(cli);
    r = await cli.exec(['wget', '-qO-', 'http://websrv/']);
    check('alias resolution', r.exitCode === 0 && r.stdout === 'by-alias\n', r);
    check('network names', cli.getNetworkNames().includes(network.getName()) && cli.getIpAddress(network.getName()) !== '', cli.getNetworkNames());
    r = await cli.exec(['ping', '-c1', '-W2', srv.getIpAddress(network.getName())]);
    check('ip address', r.exitCode === 0, r);
    await cli.stop({ timeout: 0 });
    await srv.stop({ timeout: 0 });
    started.splice(started.indexOf(cli), 1);
    started.splice(started.indexOf(srv), 1);
    await network.stop();

    step = 'fromDockerfile';
    const ctx = path.join(tmp, 'ctx');
    fs.mkdirSync(ctx);
    fs.writeFileSync(path.join(ctx, 'Dockerfile'), `FROM ${image}\nARG WHO\nCOPY msg.txt /msg.txt\nRUN echo "built for $WHO" >> /msg.txt\nCMD ["cat", "/msg.txt"]\n`);
    fs.writeFileSync(path.join(ctx, 'msg.txt'), 'from the context\n');
    const built = await GenericContainer.fromDockerfile(ctx).withBuildArgs({ WHO: 'testcontainers' }).build('tcnode/built:1', { deleteOnExit: false });
    const once = await built.withWaitStrategy(Wait.forOneShotStartup()).start();
    const out = await readUntil(await once.logs(), (t) => t.includes('built for'));
    check('fromDockerfile', out === 'from the context\nbuilt for testcontainers\n', out);
    await once.stop();
  } finally {
    for (const c of started.reverse()) await c.stop({ timeout: 0 }).catch(() => {});
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => console.log('PASS'),
  (e) => {
    console.error(`${step}: ${e.stack || e}`);
    process.exit(1);
  },
);
