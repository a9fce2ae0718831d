<?php
// The PHP reader of tests/frameworks (README.md there), run by PHP's built-in server
// (`php -S 127.0.0.1:PORT router.php`; $_POST exists only in a real SAPI): answers what $_GET,
// $_POST and json_decode(file_get_contents('php://input')) read from every request.
//
// Answer: {"readers": {"<name>": {"values": [every string value, any depth], "error": null|"..."}}}
// With a request header `x-validators`, also "validators": what filter_var(v, FILTER_VALIDATE_EMAIL)
// (with and without FILTER_FLAG_EMAIL_UNICODE) would store from those values (and from JSON object
// keys and form field names): the value itself, as PHP's filter returns it.

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

// Object keys at any depth (an app may take addresses from them).
function keys($value, array &$out): void
{
    if (is_array($value)) {
        foreach ($value as $k => $v) {
            if (is_string($k)) {
                $out[] = $k;
            }
            keys($v, $out);
        }
    }
}

$readers = [
    'php.$_GET' => reader($_GET),
    'php.$_POST' => reader($_POST),
    'php.json_decode(php://input)' => reader($json, $jsonError),
];
$answer = ['readers' => $readers];
if (isset($_SERVER['HTTP_X_VALIDATORS'])) {
    $values = array_merge(...array_column($readers, 'values'));
    keys($_GET, $values);
    keys($_POST, $values);
    keys($json, $values);
    $values = array_unique(array_filter($values, fn ($v) => str_contains($v, '@') || str_contains($v, "\u{ff20}")));
    sort($values);
    $flags = ['php.filter_var(FILTER_VALIDATE_EMAIL)' => 0,
        'php.filter_var(FILTER_VALIDATE_EMAIL, FILTER_FLAG_EMAIL_UNICODE)' => FILTER_FLAG_EMAIL_UNICODE];
    foreach ($flags as $name => $flag) {
        $answer['validators'][$name] = [];
        foreach ($values as $v) {
            $stored = filter_var($v, FILTER_VALIDATE_EMAIL, $flag);
            if ($stored !== false) {
                $answer['validators'][$name][] = [$v, $stored];
            }
        }
    }
}
header('Content-Type: application/json');
echo json_encode($answer, JSON_INVALID_UTF8_SUBSTITUTE);
