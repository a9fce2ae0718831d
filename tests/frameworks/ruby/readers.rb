# The Rack reader of tests/frameworks (README.md there): an HTTP server on 127.0.0.1:PORT that
# builds the Rack env of every request (as Puma builds it) and answers what Rack::Request#GET and
# #POST read, and JSON.parse of the body when its media type is one Rails parses as JSON.
#
#   ruby readers.rb PORT
#
# Answer: {"readers": {"<name>": {"values": [every string value, any depth], "error": null|"..."}}}
# With a request header `x-validators`, also "validators": what each validator of validators.rb
# would store from those values (and from JSON object keys and form field names).
require 'json'
require 'rack'
require 'socket'
require 'stringio'
require_relative 'validators'

# Rails' JSON parameter parser: Mime[:json] and its synonyms.
RAILS_JSON_TYPES = %w[application/json text/x-json application/jsonrequest].freeze

def strings(value, out = [])
  case value
  when String then out << value.dup.force_encoding('UTF-8').scrub
  when Array then value.each { |v| strings(v, out) }
  when Hash then value.each_value { |v| strings(v, out) } unless value.key?(:tempfile) # an upload
  end
  out
end

def env_for(method, target, headers, body)
  path, query = target.split('?', 2)
  env = {
    'REQUEST_METHOD' => method, 'SCRIPT_NAME' => '', 'PATH_INFO' => path, 'QUERY_STRING' => query || '',
    'SERVER_NAME' => '127.0.0.1', 'SERVER_PORT' => '80', 'SERVER_PROTOCOL' => 'HTTP/1.1',
    'rack.input' => StringIO.new(body.b), 'rack.errors' => $stderr, 'rack.url_scheme' => 'http',
    'rack.version' => [1, 3], 'rack.multithread' => true, 'rack.multiprocess' => false, 'rack.run_once' => false,
    'CONTENT_LENGTH' => body.bytesize.to_s
  }
  headers.each do |name, value|
    key = name.upcase.tr('-', '_')
    next if key == 'CONTENT_LENGTH'

    key = "HTTP_#{key}" unless key == 'CONTENT_TYPE'
    env[key] = env.key?(key) ? "#{env[key]}, #{value}" : value
  end
  env
end

def read_all(method, target, headers, body)
  readers = {
    'rack.GET' => ->(r) { strings(r.GET) },
    'rack.POST' => ->(r) { strings(r.POST) },
    'rails.json' => lambda do |r|
      RAILS_JSON_TYPES.include?(r.media_type) ? strings(JSON.parse(r.body.read)) : []
    end
  }
  readers.transform_values do |read|
    { 'values' => read.call(Rack::Request.new(env_for(method, target, headers, body))), 'error' => nil }
  rescue StandardError => e
    { 'values' => [], 'error' => "#{e.class}: #{e.message}".dup.force_encoding('UTF-8').scrub[0, 200] }
  end
end

def answer(method, target, headers, body)
  readers = read_all(method, target, headers, body)
  out = { 'readers' => readers }
  return out unless headers.any? { |n, _| n.casecmp?('x-validators') }

  r = Rack::Request.new(env_for(method, target, headers, body))
  names = [-> { keys(r.GET) }, -> { keys(r.POST) }, -> { keys(JSON.parse(body)) }].flat_map do |f|
    f.call
  rescue StandardError
    []
  end
  out.merge('validators' => validate(readers.values.flat_map { |x| x['values'] } + names))
end

def serve(conn)
  line = conn.gets("\r\n") or return
  method, target = line.split(' ')
  headers = []
  while (h = conn.gets("\r\n")) && h != "\r\n"
    name, value = h.chomp("\r\n").split(':', 2)
    headers << [name.strip, value.to_s.strip]
  end
  length = headers.find { |n, _| n.casecmp?('content-length') }&.last.to_i
  body = length.positive? ? conn.read(length) : ''
  answer, status = begin
    [JSON.generate(answer(method, target, headers, body)), '200 OK']
  rescue StandardError => e # a bug of this adapter, not a refusal: the harness fails on it
    ["#{e.class}: #{e.message}".dup.force_encoding('UTF-8').scrub, '500 Internal Server Error']
  end
  conn.write("HTTP/1.1 #{status}\r\ncontent-type: application/json\r\ncontent-length: #{answer.bytesize}\r\n" \
             "connection: close\r\n\r\n#{answer}")
ensure
  conn.close
end

server = TCPServer.new('127.0.0.1', Integer(ARGV[0]))
loop { Thread.new(server.accept) { |c| serve(c) } }
