<?php
// The PHP reader of tests/frameworks (README.md there), run by PHP's built-in server
// (`php -S 127.0.0.1:PORT router.php`; $_POST exists only in a real SAPI): answers what $_GET,
// $_POST and json_decode(file_get_contents('php://input')) read from every request.
//
// Answer: {"readers": {"<name>": {"values": [every string value, any depth], "error": null|"..."}}}

function strings($value, array &$out): void
{
    if (is_string($value)) {
        $out[] = $value;
    } elseif (is_array($value)) {
        foreach ($value as $v) {
            strings($v, $out);
        }
    }
}

function reader($value, ?string $error = null): array
{
    $values = [];
    strings($value, $values);
    return ['values' => $values, 'error' => $error];
}

$input = file_get_contents('php://input');
$json = json_decode($input, true);
$jsonError = $json === null && json_last_error() !== JSON_ERROR_NONE ? json_last_error_msg() : null;

header('Content-Type: application/json');
echo json_encode(['readers' => [
    'php.$_GET' => reader($_GET),
    'php.$_POST' => reader($_POST),
    'php.json_decode(php://input)' => reader($json, $jsonError),
]], JSON_INVALID_UTF8_SUBSTITUTE);
