# The Ruby email validators (tests/frameworks/README.md) as an app uses them, each answering what
# the app would store, or nothing when it refuses: Rails' `validates :email, format:
# URI::MailTo::EMAIL_REGEXP` keeps the value (Rails strips nothing; `.strip` is the common
# normalizer, also tried), and Debian's ruby-mail `Mail::Address.new(v).address`.
require 'mail'
require 'uri'

VALIDATORS = {
  'ruby.URI::MailTo::EMAIL_REGEXP' => ->(v) { v.match?(URI::MailTo::EMAIL_REGEXP) ? [v] : [] },
  'ruby.URI::MailTo::EMAIL_REGEXP.strip' => lambda do |v|
    s = v.strip
    s.match?(URI::MailTo::EMAIL_REGEXP) ? [s] : []
  end,
  'ruby-mail.Mail::Address' => lambda do |v|
    a = Mail::Address.new(v).address
    a&.include?('@') ? [a] : []
  end
}.freeze

# Object keys at any depth (an app may take addresses from them).
def keys(value, out = [])
  case value
  when Array then value.each { |v| keys(v, out) }
  when Hash
    value.each do |k, v|
      out << k.to_s.dup.force_encoding('UTF-8').scrub
      keys(v, out)
    end
  end
  out
end

# {validator => [[value, stored], ...]} for the values with an @ each accepted.
def validate(values)
  values = values.select { |v| v.include?('@') || v.include?("\uff20") }.uniq.sort
  VALIDATORS.transform_values do |f|
    values.flat_map do |v|
      f.call(v).map { |s| [v, s.to_s.dup.force_encoding('UTF-8').scrub] }
    rescue StandardError
      []
    end
  end
end
