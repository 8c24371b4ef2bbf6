<?php
// A battlelog webhook receiver in plain PHP (php-cli, no extensions beyond
// the defaults), for PHP's built-in server or any web server:
//
//     WEBHOOK_SECRET=whsec_... WEBHOOK_DATA_DIR=/tmp/hooks php -S 127.0.0.1:8000 receiver.php
//
// It checks each delivery the Standard Webhooks way (standardwebhooks.com):
// the secret is `whsec_<base64 key>`, and `webhook-signature` holds one or
// more `v1,<base64 HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}")>`,
// space-separated. A delivery more than five minutes old or early is refused,
// and one whose `webhook-id` was seen before is answered 200 without being
// processed again: battlelog-webhooks retries until it gets a 2xx, so an
// event can arrive more than once.
//
// PHP keeps nothing between requests, so the seen ids are files under
// WEBHOOK_DATA_DIR/seen, created exclusively (one process wins a race); each
// event accepted is appended as one JSON line to WEBHOOK_DATA_DIR/events.jsonl.
// A forum would keep both in its database, in one transaction.

const TOLERANCE_SECONDS = 300;
const MAX_BODY_BYTES = 4 * 1024 * 1024;

function answer(int $status, string $text): void
{
    http_response_code($status);
    header('Content-Type: text/plain; charset=utf-8');
    echo $text, "\n";
}

function signature_valid(string $key, string $id, string $timestamp, string $body, string $header): bool
{
    $expected = base64_encode(hash_hmac('sha256', "$id.$timestamp.$body", $key, true));
    foreach (explode(' ', $header) as $candidate) {
        [$version, $value] = array_pad(explode(',', $candidate, 2), 2, '');
        if ($version === 'v1' && hash_equals($expected, $value)) {
            return true;
        }
    }
    return false;
}

function receive(): void
{
    if ($_SERVER['REQUEST_METHOD'] !== 'POST') {
        answer(405, 'POST only');
        return;
    }
    $secret = trim((string) getenv('WEBHOOK_SECRET'));
    $dir = (string) getenv('WEBHOOK_DATA_DIR');
    if (!str_starts_with($secret, 'whsec_') || $dir === '') {
        answer(500, 'set WEBHOOK_SECRET (whsec_...) and WEBHOOK_DATA_DIR');
        return;
    }
    $key = base64_decode(substr($secret, strlen('whsec_')), true);
    $body = file_get_contents('php://input', false, null, 0, MAX_BODY_BYTES + 1);
    if ($key === false || $body === false || strlen($body) > MAX_BODY_BYTES) {
        answer(400, 'bad secret or body');
        return;
    }
    $id = $_SERVER['HTTP_WEBHOOK_ID'] ?? '';
    $timestamp = $_SERVER['HTTP_WEBHOOK_TIMESTAMP'] ?? '';
    $signature = $_SERVER['HTTP_WEBHOOK_SIGNATURE'] ?? '';
    if ($id === '' || !ctype_digit($timestamp) || $signature === '') {
        answer(400, 'missing webhook headers');
        return;
    }
    if (abs(time() - (int) $timestamp) > TOLERANCE_SECONDS) {
        answer(400, 'timestamp outside the tolerance');
        return;
    }
    if (!signature_valid($key, $id, $timestamp, $body, $signature)) {
        answer(401, 'bad signature');
        return;
    }
    $seen = "$dir/seen";
    if (!is_dir($seen)) {
        @mkdir($seen, 0700, true);
    }
    // Exclusive creation: only the first delivery of an id gets the file.
    $marker = @fopen("$seen/" . hash('sha256', $id), 'x');
    if ($marker === false) {
        answer(200, 'already processed');
        return;
    }
    fclose($marker);
    $data = json_decode($body, true)['data'] ?? [];
    $line = json_encode([
        'webhook_id' => $id,
        'tenant' => $data['tenant'] ?? null,
        'battle_id' => $data['battle_id'] ?? null,
        'version' => $data['version'] ?? null,
        'event_type' => $data['event_type'] ?? null,
    ]);
    file_put_contents("$dir/events.jsonl", $line . "\n", FILE_APPEND | LOCK_EX);
    answer(200, 'ok');
}

receive();
